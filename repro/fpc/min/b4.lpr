program b4;
{ B4: the server closes the connection after a response without saying
  so: no "Connection: close" header, then FIN.  With the defaults
  (KeepConnections off) that is every response.  A client that pools
  connections (HTTP/1.1 keeps them by default) may send its next request
  on the socket the server has just closed and gets EOF or ECONNRESET.

  Compile:  fpc b4.lpr      (FPC trunk; 3.2.2 too)
  Run:      ./b4 8080        (the port; it prints what it listens on)
  Command:  curl -s -o /dev/null -D - -w 'num_connects %{num_connects}\n' 'http://127.0.0.1:8080/?[1-2]' | grep -iE '^(HTTP/|Connection:|num_connects)'
  Expected: "Connection: close" in each response, since the server
            closes each connection after it: curl opens a new one for
            the second request (num_connects 1 each time)
  Actual:   no "Connection:" line, and still num_connects 1 each time:
            the server closed the connection without saying so, and curl
            found its kept socket dead when it came to reuse it
  FPC 3.2.2: the same. }
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
  AResponse.Content := 'pong';
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  WriteLn('b4: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
