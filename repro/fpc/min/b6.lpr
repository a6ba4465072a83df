program b6;
{ B6: in tmThreadPool a kept-alive connection waits between requests in a
  list that only the accept-idle callback re-checks
  (TFPPooledConnectionHandler.CheckRequests, from DoAcceptIdle).  With the
  default AcceptIdleTimeout 0 accept() blocks and that callback never
  runs: the second request on a connection is never answered, and the
  keep-alive time-out is never enforced either.

  Compile:  fpc b6.lpr      (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b6 8080        (the port; it prints what it listens on)
  Command:  curl -s -m 5 -o /dev/null -w '%{http_code} %{num_connects}\n' 'http://127.0.0.1:8080/?[1-2]'
            (2 requests on one connection; -m 5: give up after 5 s)
  Expected: 200 1
            200 0
  Actual:   200 1
            000 0        (no answer in 5 s, nor ever)
  FPC 3.2.2 has no tmThreadPool. }
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
  Server.ThreadMode := tmThreadPool;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 2000;
  WriteLn('b6: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
