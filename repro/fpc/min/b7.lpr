program b7;
{ B7: tmThreadPool deadlocks when kept-alive connections close together.
  On each accept-idle tick TFPPooledConnectionHandler.CheckRequests walks
  the connection list with the list locked (Foreach) and hands every
  readable connection to the pool (CheckRequest, ScheduleRequest,
  AddTask).  A closed connection is readable.  With every worker busy,
  TFPCustomSimpleThreadPool.DoAddTask loops until one is free; a worker
  whose connection closed must remove it (ConnectionDone,
  RemoveConnection), which needs the list lock.  Neither moves: the
  accepting thread spins a CPU, nothing is accepted or served again.

  Compile:  fpc b7.lpr      (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b7 8080        (the port; it prints what it listens on)
  Command:  curl --no-progress-meter -Z -m 5 -o /dev/null -w '%{http_code}\n' 'http://127.0.0.1:8080/?[1-32]' | sort | uniq -c; curl -s -m 5 -o /dev/null -w '%{http_code}\n' 'http://127.0.0.1:8080/?[1-3]'
            (32 connections at once, one request each, closed together
            when curl ends; then 3 requests on a new connection)
  Expected:      32 200
            200
            200
            200
  Actual:         3 000      (or 32 200: the hang comes during the
                29 200       burst or at the first tick after it)
            000
            000
            000          (no answer, nor ever: the server is hung, its
                         accepting thread spinning; top -H shows it R)
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
  Server.KeepConnectionTimeout := 15000;
  Server.AcceptIdleTimeout := 100;
  WriteLn('b7: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
