program b10;
{ B10: "Expect: 100-continue" is never answered.  A client that sends it
  holds the request body back until the server says "HTTP/1.1 100
  Continue", or until its own wait ends (curl: 1 s, then it sends the
  body anyway).  TFPHTTPConnection.ReadRequestContent reads the body
  without answering, so every such request is a whole client wait late.
  curl asks for 100-continue by itself for a body above 1 MiB; -D - shows
  the headers of every response, an interim 100 included.

  Compile:  fpc b10.lpr     (FPC trunk; 3.2.2 too)
  Run:      ./b10 8080       (the port; it prints what it listens on)
  Command:  head -c 2097152 /dev/zero | curl -s -D - -o /dev/null -w 'time_total %{time_total}\n' --data-binary @- http://127.0.0.1:8080/echo
  Expected: HTTP/1.1 100 Continue, then HTTP/1.1 200 OK and its headers,
            at once (time_total a few ms)
  Actual:   HTTP/1.1 200 OK and its headers only, time_total over 1 s
            (curl -v says "Done waiting for 100-continue")
  The answer is the body's length: 2097152, with the fix as without it. }
{$mode objfpc}{$H+}
uses {$ifdef unix}cthreads,{$endif} SysUtils, fphttpserver;

type
  TServer = class(TFPHttpServer)
    procedure Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse);
  end;

procedure TServer.Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
  var AResponse: TFPHTTPConnectionResponse);
begin
  AResponse.Content := IntToStr(Length(ARequest.Content));
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  WriteLn('b10: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
