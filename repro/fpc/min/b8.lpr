program b8;
{ B8: a connection whose descriptor is 1024 or above is never read.
  TSocketHandler.Select (behind TSocketStream.CanRead) asks select() with a
  TFDSet, which holds descriptors 0..1023 only: for a higher one the set
  is empty, select() just waits out its time-out, and the request is never
  seen.  Here the first read waits up to RequestReadTimeout (10 s), then
  the connection is closed unanswered as if it had sent nothing.

  Compile:  fpc b8.lpr      (FPC trunk; 3.2.2 too)
  Run:      ulimit -n 4096; ./b8 8080   (it prints what it listens on)
  Command:  bash -c 'ulimit -n 4096; exec 3<>/dev/tcp/127.0.0.1/8080; for i in $(seq 1100); do exec {fd}<>/dev/tcp/127.0.0.1/8080 || exit; done; for c in 3 $fd; do env printf "GET / HTTP/1.1\r\nHost: x\r\n\r\n" >&$c; echo "fd $c: $(head -1 <&$c)"; done'
            (1,101 connections; a request on the first and on the last,
            whose server-side descriptor is about 1,106)
  Expected: fd 3: HTTP/1.1 200 OK
            fd 1111: HTTP/1.1 200 OK
  Actual:   fd 3: HTTP/1.1 200 OK
            fd 1111:                 (after 10 s; head: ... Connection reset
                                     by peer: closed unanswered)
  FPC 3.2.2 reads without select(): both answered (not affected). }
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
  Server.QueueSize := 2048;                 { accept the 1,101 at once }
  {$if FPC_FULLVERSION >= 30301}
  Server.ThreadMode := tmThread;
  Server.MaxLiveConnectionCount := 0;       { no cap (default 128) }
  Server.RequestReadTimeout := 10000;       { default 30 s }
  {$else}
  Server.Threaded := True;
  {$endif}
  WriteLn('b8: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
