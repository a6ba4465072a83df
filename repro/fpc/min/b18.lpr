program b18;
{ B18: an empty line (CRLF) before the request line is taken for "no
  request".  TFPHTTPConnection.ReadRequestHeaders returns Nil when the
  first line it reads is empty; DoHandleRequest logs an empty request,
  turns keep-alive off, and the connection is closed without an answer.
  RFC 9112 2.2: a server that is expecting to receive and parse a
  request-line SHOULD ignore at least one empty line (CRLF) received
  prior to it (some clients send a CRLF after a POST body, RFC 2616 4.1:
  on a kept connection their next request is lost).
  The command is bash's /dev/tcp: one CRLF, then a GET, in one write,
  then everything the server sends until it closes (cat's exit 0), or
  5 s (exit 124).

  Compile:  fpc b18.lpr
  Run:      ./b18 8080       (the port; it prints what it listens on)
  Command:  bash -c 'trap "" PIPE; exec 3<>/dev/tcp/127.0.0.1/8080; env printf "\r\nGET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3; timeout 5 cat <&3; echo "[cat exit $?]"'
  Expected: "HTTP/1.1 200 OK" and its head, "pong", then the close
            ("[cat exit 0]"); the program prints "request: GET /ping"
  Actual:   only "[cat exit 0]": the server closed the connection
            without a byte, and nothing was dispatched
  FPC 3.2.2: the same (its ReadRequestHeaders takes the empty line for
  the request line and the request line for a header line without a
  colon; InitRequestVars then raises for the empty method: no answer). }
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
  WriteLn('b18: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
