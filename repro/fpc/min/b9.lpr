program b9;
{ B9: assigning OnAcceptIdle while the server runs stops it checking its
  connections.  TFPCustomHttpServer.SetIdle, the property's setter, also
  makes the new handler the listener's OnIdle, in place of the server's
  own DoAcceptIdle, which is what runs CheckRequests.  In tmPolled every
  read after a connection's first waits for that check (the idle tick),
  so from then on no kept-alive connection is read again.  Here GET /set
  assigns the handler, as an application that installs one late does.

  Compile:  fpc b9.lpr      (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b9 8080        (the port; it prints what it listens on)
  Command:  curl -s -m 5 -o /dev/null -w '%{http_code} %{num_connects}\n' 'http://127.0.0.1:8080/{ping,set,ping}'
            (3 requests on one connection; -m 5: give up after 5 s)
  Expected: 200 1
            200 0
            200 0
  Actual:   200 1
            200 0
            000 0        (no answer in 5 s, nor ever)
  The server prints "OnAcceptIdle" when the application's handler first
  runs, with the fix as without it.  FPC 3.2.2 has no tmPolled. }
{$mode objfpc}{$H+}
uses {$ifdef unix}cthreads,{$endif} SysUtils, fphttpserver;

type
  TServer = class(TFPHttpServer)
  private
    FIdleSeen: Boolean;
  public
    procedure Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse);
    procedure Idle(Sender: TObject);
  end;

procedure TServer.Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
  var AResponse: TFPHTTPConnectionResponse);
begin
  if ARequest.PathInfo = '/set' then
    OnAcceptIdle := @Idle;
  AResponse.Content := 'pong';
end;

procedure TServer.Idle(Sender: TObject);
begin
  if not FIdleSeen then
  begin
    WriteLn('OnAcceptIdle');
    Flush(Output);
  end;
  FIdleSeen := True;
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  Server.ThreadMode := tmPolled;
  Server.KeepConnections := True;
  Server.KeepConnectionTimeout := 2000;
  WriteLn('b9: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
