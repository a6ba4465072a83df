program b5;
{ B5: TFPHTTPConnection.ReadRequestContent empties the connection's
  buffer (FBuffer) when it takes a request body from it: a request that
  arrived in the same segment as the body of the one before is lost.
  (With only B5 fixed the request stays in FBuffer, but B2 then keeps it
  unanswered: the fix needs B2's.)
  The command is bash's /dev/tcp, not nc: the connection stays open both
  ways until the server closes it (an nc that half-closes at the end of
  its input, such as ncat, would make the socket readable with its FIN).
  env printf is coreutils' printf: one write(), so the body and the GET
  arrive in one segment (bash's own printf writes line by line).

  Compile:  fpc b5.lpr      (FPC trunk; 3.2.2 too)
  Run:      ./b5 8080        (the port; it prints what it listens on)
  Command:  bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; env printf "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" >&3; timeout 5 cat <&3' | grep -c '^HTTP/1.1 200'
  Expected: 2, at once (the server closes after the GET, which asks for it)
  Actual:   1, after 2 s (the keep-alive time-out closes the connection)
  FPC 3.2.2: 0; its ReadRequestContent copies the GET into the 5-byte
  body (a heap overrun) and then waits in recv() for a negative number of
  bytes until the client gives up (timeout 5). }
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
  AResponse.Content := ARequest.Method + ' ' + ARequest.Content;
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
  WriteLn('b5: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
