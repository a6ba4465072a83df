program b12;
{ B12: TFPHTTPConnection.ReadRequestContent sizes the body from
  Content-Length before a byte of it has come (SetLength, zero-filled),
  and its read loop stops at the end of the stream: a client that
  announces 100 bytes, sends 10 and ends its stream gets its request
  dispatched with a 100-byte body, the 90 bytes that never came as zeros.
  (The same SetLength holds the whole announced length, up to MaxBodySize,
  2 GiB by default, for as long as the client sends nothing more.)
  The command is Python's socket module: bash's /dev/tcp cannot shut down
  the write side alone, and the client must stay to read the answer.

  Compile:  fpc b12.lpr     (FPC trunk; 3.2.2 too)
  Run:      ./b12 8080       (the port; it prints what it listens on)
  Command:  python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", 8080)); s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"); s.shutdown(socket.SHUT_WR); print(b"".join(iter(lambda: s.recv(4096), b"")).decode("latin-1"))' | grep -a -o -E '^HTTP/1.1 [0-9]+|[0-9]+ bytes, [0-9]+ zero'
  Expected: nothing: the server closes the connection without a response
            (RFC 9112 8: an incomplete message must not be processed)
  Actual:   HTTP/1.1 200 and "100 bytes, 90 zero": the request dispatched
            with the 10 bytes sent and 90 zeros
  FPC 3.2.2: HTTP/1.1 200 as well (its body is a string of the announced
  length that SetLength does not clear: the 90 bytes are what the heap
  held there, zeros in a fresh process). }
{$mode objfpc}{$H+}
uses {$ifdef unix}cthreads,{$endif} SysUtils, fphttpserver;

type
  TServer = class(TFPHttpServer)
    procedure Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse);
  end;

procedure TServer.Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
  var AResponse: TFPHTTPConnectionResponse);
var
  S: string;
  I, Zeros: Integer;
begin
  S := ARequest.Content;
  Zeros := 0;
  for I := 1 to Length(S) do
    if S[I] = #0 then
      Inc(Zeros);
  AResponse.Content := Format('%d bytes, %d zero', [Length(S), Zeros]);
  WriteLn('request: ', AResponse.Content);
  Flush(Output);
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnRequest := @Server.Serve;
  WriteLn('b12: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
