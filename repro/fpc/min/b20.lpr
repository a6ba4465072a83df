program b20;
{ B20: a request-target in absolute-form is not accepted.
  TFPHTTPConnection.ParseStartLine takes the target as Request.URL, cuts
  it at '?' and puts a '/' before a first character that is not one:
  "GET http://127.0.0.1:8080/ping" gets the PathInfo
  "/http://127.0.0.1:8080/ping", which no route has, and the Host field
  is whatever the client sent.  RFC 9112 3.2.2: a server MUST accept the
  absolute-form, and an origin server MUST then ignore the Host field and
  use the target's host (proxies and some clients send this form).
  The command is bash's /dev/tcp: the GET (Connection: close, Host: x) in
  one write, then everything the server sends until it closes (cat's
  exit 0), or 5 s (exit 124).  The program routes by PathInfo, as an
  application does.

  Compile:  fpc b20.lpr
  Run:      ./b20 8080       (the port; it prints what it listens on)
  Command:  bash -c 'trap "" PIPE; exec 3<>/dev/tcp/127.0.0.1/8080; env printf "GET http://127.0.0.1:8080/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3; timeout 5 cat <&3; echo "[cat exit $?]"'
  Expected: "HTTP/1.1 200 OK", "pong", then the close ("[cat exit 0]");
            the program prints "request: URL http://127.0.0.1:8080/ping
            PathInfo /ping Host 127.0.0.1:8080"
  Actual:   "HTTP/1.1 404 Not Found", "not found"; the program prints
            "request: URL http://127.0.0.1:8080/ping PathInfo
            /http://127.0.0.1:8080/ping Host x"
  FPC 3.2.2: the same (its ParseStartLine derives PathInfo alike). }
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
  WriteLn('request: URL ', ARequest.URL, ' PathInfo ', ARequest.PathInfo,
    ' Host ', ARequest.Host);
  Flush(Output);
  if ARequest.PathInfo = '/ping' then
    AResponse.Content := 'pong'
  else
  begin
    AResponse.Code := 404;
    AResponse.Content := 'not found';
  end;
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  WriteLn('b20: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
