program b16;
{ B16: a request that TFPHTTPConnection rejects while reading it (here an
  invalid request line: ParseStartLine raises EHTTPServer with 400) is
  never answered.  HandleRequest's except only turns keep-alive off and
  calls HandleRequestError, which logs or calls OnRequestError; nothing
  writes a response, and the client sees the connection close with no
  status (curl: "Empty reply from server").  RFC 9112 3: a server that
  receives an invalid request line SHOULD answer 400.  The same for 408,
  413 and 431 (RFC 9110 15.5.9, 15.5.14, RFC 6585).
  The command is bash's /dev/tcp: one request with the version FTP/1.0,
  then everything the server sends until it closes (cat's exit 0), or
  5 s (exit 124).

  Compile:  fpc b16.lpr
  Run:      ./b16 8080       (the port; it prints what it listens on)
  Command:  bash -c 'trap "" PIPE; exec 3<>/dev/tcp/127.0.0.1/8080; env printf "GET /ping FTP/1.0\r\nHost: x\r\n\r\n" >&3; timeout 5 cat <&3; echo "[cat exit $?]"'
  Expected: "HTTP/1.1 400 Bad Request" and its head, then the close
            ("[cat exit 0]")
  Actual:   only "[cat exit 0]": the server closed the connection
            without a byte
  FPC 3.2.2: the same (HandleRequestError calls OnRequestError only). }
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
  WriteLn('request: ', ARequest.Method, ' ', ARequest.URL);
  Flush(Output);
  AResponse.Content := 'pong';
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  WriteLn('b16: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
