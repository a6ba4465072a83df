program b15;
{ B15: TFPCustomHttpServer.Destroy (Free) waits with no bound until every
  connection has been removed by the thread or task that serves it.  In
  tmThreadPool a kept-alive connection between two requests has no task,
  and only the accept loop, which has ended, ever removes it: Free never
  returns, whether its client stays or not.  (tmPolled: the same;
  tmThread: Free waits until the connection thread's wait ends by itself.)
  The command is bash's /dev/tcp: one GET on a connection that it keeps
  open, then GET /stop on another, which stops the accept loop (the
  program then frees its server and says so); it waits, at most 10 s, for
  the server to close the kept-alive connection.  What shows the defect is
  the program's own output: the client's connection is closed either way
  (CloseSockets closes its socket), but nothing frees it, and Free waits.

  Compile:  fpc b15.lpr     (FPC 3.3.1, trunk: it uses ThreadMode)
  Run:      ./b15 8080       (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; env printf "GET / HTTP/1.1\r\nHost: x\r\n\r\n" >&3; IFS= read -r -t 5 s <&3; echo "GET /: $s"; exec 4<>/dev/tcp/127.0.0.1/8080; env printf "GET /stop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&4; IFS= read -r -t 5 s <&4; echo "GET /stop: $s"; timeout 10 cat <&3 > /dev/null; [ $? = 124 ] && echo "kept-alive connection still open after 10 s" || echo "kept-alive connection closed by the server"'
  Expected: the command prints two "HTTP/1.1 200 OK" and "kept-alive
            connection closed by the server"; the program prints "b15:
            freeing the server", then "b15: Free returned" (about 1 s later)
  Actual:   the same from the command; the program prints "b15: freeing
            the server" and nothing more: Free never returns
  FPC 3.2.2: no keep-alive and no tmThreadPool: n/a. }
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
  if ARequest.PathInfo = '/stop' then
    Active := False;   // the accept loop ends at its next idle tick
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
  Server.KeepConnectionTimeout := 600000;   // far beyond the command
  Server.AcceptIdleTimeout := 100;
  WriteLn('b15: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
  WriteLn('b15: freeing the server');
  Flush(Output);
  Server.Free;
  WriteLn('b15: Free returned');
end.
