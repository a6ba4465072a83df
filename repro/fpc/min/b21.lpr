program b21;
{ B21: in tmPolled a kept-alive connection's next request is read only on
  the next accept-idle tick.  TFPPolledConnectionHandler checks its
  connections in CheckRequests, which only TFPCustomHttpServer.DoAcceptIdle
  calls: ssockets' RunIdleLoop fires it when no connection came within
  AcceptIdleTimeout.  With AcceptIdleTimeout 0 (the default)
  CreateServerSocket sets the tick to DefaultPolledAcceptIdleTimeout,
  100 ms: every kept-alive request waits up to that, ~10 requests a second
  for a client.  Here AcceptIdleTimeout is 5000, so that the wait shows as
  a count, without a clock: curl's first request may take up to a tick
  (-m 7: it is read when the connection is accepted, or on the next tick
  if its bytes come after the accept), the second on the same connection
  is given 2 s (--next -m 2), and the tick that reads it comes 5 s after
  the first was served.

  Compile:  fpc b21.lpr      (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b21 8080       (the port; it prints what it listens on)
  Command:  curl -s -m 7 -o /dev/null -w '%{http_code} %{num_connects}\n' http://127.0.0.1:8080/ping --next -s -m 2 -o /dev/null -w '%{http_code} %{num_connects}\n' http://127.0.0.1:8080/ping
            (2 requests on one connection; the second gets 2 s)
  Expected: 200 1
            200 0
  Actual:   200 1
            000 0        (read only on the 5 s tick, after curl gave up)
  FPC 3.2.2 has no tmPolled. }
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
  Server.ThreadMode := tmPolled;
  Server.AcceptIdleTimeout := 5000;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 15000;
  WriteLn('b21: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
