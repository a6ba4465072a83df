program b2;
{ B2: TFPHTTPConnection.RequestPending looks only at the socket, never at
  the bytes already read into the connection's buffer (FBuffer).  Requests
  that arrive together are all read by the first recv(); the first is
  answered, the others wait in FBuffer for the socket to become readable,
  which it never does: after the keep-alive time-out (2 s here) the server
  closes the connection with them unanswered.
  The command is bash's /dev/tcp, not nc: the connection stays open both
  ways until the server closes it, as an HTTP client's does.  An nc that
  half-closes at the end of its input (ncat, the nc of Fedora/RHEL) makes
  the socket readable with its FIN, and then all three are answered.
  env printf is coreutils' printf, which sends the three in one write(),
  as a pipelining client does; bash's own printf writes line by line, and
  whether the lines then arrive together is up to the scheduler.

  Compile:  fpc b2.lpr      (FPC trunk; 3.2.2 too)
  Run:      ./b2 8080        (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; env printf "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3; timeout 5 cat <&3' | grep -c '^HTTP/1.1 200'
  Expected: 3, at once (the server closes after /3, which asks for it)
  Actual:   1, after 2 s (the keep-alive time-out closes the connection)
  FPC 3.2.2 prints 1 too: it has no keep-alive, answers /1 and closes. }
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
  WriteLn('b2: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
