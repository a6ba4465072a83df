program b3;
{ B3: a response is two writes (TFPHTTPConnectionResponse.DoSendHeaders,
  then DoSendContent) and TCP_NODELAY is never set.  On a kept-alive
  connection Nagle holds the small body segment until the header segment
  is acknowledged, and the client delays that ACK (~40 ms on Linux, ~200 ms
  on Windows): every request after the first on a reused connection
  stalls.  A fresh connection does not (the client ACKs at once).

  Compile:  fpc b3.lpr      (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b3 8080        (the port; it prints what it listens on)
  Command:  curl -s -o /dev/null -w '%{num_connects} %{time_total}\n' 'http://127.0.0.1:8080/?[1-20]'
            (20 requests on one connection: num_connects 1, then 0)
  Control:  curl -s -o /dev/null -w '%{num_connects} %{time_total}\n' -H 'Connection: close' 'http://127.0.0.1:8080/?[1-20]'
            (the same 20 requests, a fresh connection each: num_connects 1)
  Expected: requests 2..20 as fast as on a fresh connection
  Actual:   requests 2..20 ~40 ms each, ~100 times a fresh connection's
  strace -f -e trace=sendto,setsockopt ./b3 8080 shows 2 sendto per
  response and no setsockopt(TCP_NODELAY).  FPC 3.2.2: no keep-alive,
  so no reused connection that could stall. }
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
  WriteLn('b3: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
