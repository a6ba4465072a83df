program b11;
{ B11: nothing in TFPHTTPConnection checks where a request ends: of two
  Content-Length fields the last wins (THTTPHeader.SetFieldByName), so a
  POST that a proxy in front frames by the first (33: the GET is its
  body) is here a POST with no body, and the GET it carried is the next
  request on the connection: answered as soon as anything else arrives on
  it (or at once, with B2 fixed). Transfer-Encoding: chunked, whitespace
  before a colon and an obs-folded Content-Length do the same.
  The command is bash's /dev/tcp, as b5's: the connection stays open both
  ways until the server closes it; env printf (coreutils') sends the
  request in one write().  bash's own printf writes line by line, and a
  server that closes after the POST (3.2.2) then resets the connection
  under the later lines: bash dies of SIGPIPE before cat reads a byte.

  Compile:  fpc b11.lpr     (FPC trunk; 3.2.2 too)
  Run:      ./b11 8080       (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; env printf "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 33\r\nContent-Length: 0\r\n\r\nGET /hidden HTTP/1.1\r\nHost: x\r\n\r\n" >&3; timeout 5 cat <&3' | grep -a -o '^HTTP/1.1 [0-9]*'
  Expected: HTTP/1.1 400, at once, and the server closes (RFC 9112 6.3:
            differing Content-Length values are an unrecoverable error)
  Actual:   HTTP/1.1 200 (the POST dispatched with the last length, 0),
            and the GET waits in the buffer as the next request until the
            keep-alive time-out closes the connection (2 s)
  FPC 3.2.2: HTTP/1.1 200 as well (the last value wins there too; no
  keep-alive, so it closes at once). }
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
  AResponse.Content := ARequest.Method + ' ' + ARequest.URL + ' ' + IntToStr(Length(ARequest.Content));
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  {$if FPC_FULLVERSION >= 30301}
  Server.ThreadMode := tmThread;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 2000;
  {$endif}
  WriteLn('b11: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
