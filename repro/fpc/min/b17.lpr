program b17;
{ B17: RequestReadTimeout bounds each read of a request, not the request:
  TFPHTTPConnection.ReadString's FillBuffer waits
  FSocket.CanRead(RequestReadTimeout) before each fill of the buffer, so a
  client that sends its request head a few bytes at a time, each gap below
  the time-out, is read for as long as it likes (slowloris).  Here the
  time-out is 1000 ms and the head (66 bytes) comes 3 bytes every 100 ms:
  2.2 s, each gap a tenth of the time-out.  It holds its connection, and
  in tmNone and tmPolled the whole server; 128 such clients hold every
  slot of MaxLiveConnectionCount (everyone else gets 503).
  The command is bash's /dev/tcp: each piece in one write (env printf),
  stopping once the server has answered or closed (read -t 0), then
  everything the server sends until it closes (cat's exit 0), or 5 s.
  It prints the longest gap between two of its writes: a run in which
  the client itself stalled (500 ms or more, a loaded machine) says
  nothing about the server.

  Compile:  fpc b17.lpr     (FPC trunk; 3.2.2 too)
  Run:      ./b17 8080       (the port; it prints what it listens on)
  Command:  bash -c 'trap "" PIPE; exec 3<>/dev/tcp/127.0.0.1/8080; printf -v h "GET /ping HTTP/1.1\r\nHost: x\r\nX-Drip: %s\r\n\r\n" ddddddddddddddddddddddddd; n=0 g=0 t=${EPOCHREALTIME/[.,]/}; for ((i = 0; i < ${#h}; i += 3)); do read -t 0 -u 3 && break; p=${h:i:3}; env printf %s "$p" >&3 || break; n=$((n + ${#p})) u=${EPOCHREALTIME/[.,]/}; ((u - t > g)) && g=$((u - t)); t=$u; sleep 0.1; done; echo "[sent $n of ${#h} bytes, longest gap $((g / 1000)) ms]"; timeout 5 cat <&3; echo "[cat exit $?]"'
  Expected: the connection closed (with a 408 where the server answers
            its errors) about 1 s after the first byte: "[sent N of 66
            bytes, longest gap 100 ms]" with N below 66 (21 here), then
            "[cat exit 0]"
  Actual:   "[sent 66 of 66 bytes, longest gap 100 ms]", then "HTTP/1.1 200 OK" and "pong":
            the whole dripped head was read
  FPC 3.2.2: the same (it has no RequestReadTimeout at all: nothing bounds
  a request, a silent client included). }
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
  WriteLn('request: ', ARequest.Method, ' ', ARequest.URL);
  Flush(Output);
  AResponse.Content := 'pong';
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  {$if declared(DefaultRequestReadTimeout)}
  Server.RequestReadTimeout := 1000;   { ms; 30000 by default }
  {$endif}
  WriteLn('b17: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
