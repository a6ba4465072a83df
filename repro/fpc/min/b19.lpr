program b19;
{ B19: at MaxLiveConnectionCount, TFPCustomHttpServer.DoOnAllowConnect
  writes a fixed 503 with no Content-Length (its text ends where the
  connection ends, RFC 9112 6.3 rule 8) and the socket is closed at once,
  the client's request unread: the close is then a reset, not a FIN, and
  a client cannot tell the whole 503 from one cut short.  curl fails the
  transfer when the reset comes before the end it waits for.
  The command holds the one slot (MaxLiveConnectionCount 1) with a
  kept-alive connection (bash /dev/tcp), prints one 503's head, then
  counts the outcomes of 100 more curl GETs.

  Compile:  fpc b19.lpr
  Run:      ./b19 8080       (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; env printf "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n" >&3; head -c 15 <&3; echo; curl -s -D - -o /dev/null http://127.0.0.1:8080/ping; for i in $(seq 100); do curl -s -o /dev/null -w "%{http_code} " http://127.0.0.1:8080/ping; echo "exit $?"; done | sort | uniq -c'
  Expected: "HTTP/1.1 200 OK", the 503's head with "Content-Length: 59",
            then "100 503 exit 0"
  Actual:   the 503's head has no Content-Length, and some transfers
            fail: e.g. "80 503 exit 0" and "20 503 exit 56" (curl: "Recv
            failure: Connection reset by peer")
  FPC 3.2.2: no MaxLiveConnectionCount (no 503): not applicable. }
{$mode objfpc}{$H+}
uses {$ifdef unix}cthreads,{$endif} SysUtils, fphttpserver;

type
  TServer = class(TFPHttpServer)
  public
    property MaxLiveConnectionCount;
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
  Server.ThreadMode := tmThread;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 60000;
  Server.MaxLiveConnectionCount := 1;
  Server.OnRequest := @Server.Serve;
  WriteLn('b19: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
