program b14;
{ B14: TFPHTTPConnectionResponse.DoSendContent writes the content whatever
  the request's method: a response to HEAD carries, after its head, the
  content a GET would get.  RFC 9110 9.3.2: the server MUST NOT send
  content in a response to HEAD; a client reads none (RFC 9112 6.3) and,
  on a kept-alive connection, takes those bytes for the start of the next
  response.  Measured on trunk, a HEAD and then a GET on one connection,
  20 runs: curl 7.88.1 said "Excess found: excess = 5 url = / (zero-length
  body)" (15) or failed the GET, "curl: (1) Received HTTP/0.9 when not
  allowed" (5); Python 3.11's http.client raised BadStatusLine('pong\n')
  for the GET in 0 to 6 of 20 (content read with the head is dropped);
  with the fix, neither.
  The command is bash's /dev/tcp: one HEAD, with Connection: close so
  that the server closes after its response; awk counts what came after
  the head.

  Compile:  fpc b14.lpr     (FPC trunk; 3.2.2 too)
  Run:      ./b14 8080       (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; env printf "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3; timeout 5 cat <&3' | awk 'h { n += length($0) + 1 } /^\r?$/ { h = 1 } /^Content-Length:/ { print $1, $2 + 0 } END { print "bytes after the head:", n + 0 }'
  Expected: "Content-Length: 5" (what a GET gets: "pong" and a line end),
            then "bytes after the head: 0"
  Actual:   "Content-Length: 5", then "bytes after the head: 5": the content
  FPC 3.2.2: the same, "bytes after the head: 5": affected. }
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
  {$if FPC_FULLVERSION >= 30301}
  Server.ThreadMode := tmThread;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 2000;
  {$endif}
  WriteLn('b14: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
