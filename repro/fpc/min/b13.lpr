program b13;
{ B13: TFPHTTPConnection.DoHandleRequest decides keep-alive by comparing
  the whole Connection field with 'close' and 'keep-alive' (SameText), and
  takes only version '1.1' to persist by default.  Connection is a list
  of options (RFC 9110 7.6.1), and a close among them means the server
  closes the connection after the response (RFC 9112 9.6): with
  "Connection: keep-alive, close" the server keeps it open, and answers
  the next request sent on it.  (An HTTP/1.2 request, which persists as
  1.1 does, RFC 9112 9.3, is closed after every response.)
  The command is bash's /dev/tcp: it reads the first answer (status line,
  head, then its body, "pong" and a line end), then sends the second GET
  on the same connection.

  Compile:  fpc b13.lpr     (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b13 8080       (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; get() { env printf "GET /$1 HTTP/1.1\r\nHost: x\r\nConnection: $2\r\n\r\n" >&3 && IFS= read -r -t 5 s <&3 && echo "$s" && while IFS= read -r -t 5 l <&3 && [ ${#l} -gt 1 ]; do :; done && read -r -t 5 b <&3; }; get 1 "keep-alive, close"; get 2 close' | grep -c '^HTTP/1.1 200'
  Expected: 1: the server closes the connection after the first answer,
            and the second GET finds it closed
  Actual:   2: the connection stayed open and the second GET is answered
  FPC 3.2.2: no keep-alive, so no connection whose options could keep
  it open (it closes after every response). }
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
  Server.ThreadMode := tmThread;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 2000;
  WriteLn('b13: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
