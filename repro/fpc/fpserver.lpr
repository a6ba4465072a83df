{ fpserver: a small test server built on the REAL Free Pascal TFPHttpServer
  (unit fphttpserver), with the same command-line and output contract as the
  kit's C clone server-min (DESIGN.md section 7).

  Routes:  GET /ping       -> 200 text/plain "pong"
           POST /echo      -> 200, the request body
           GET /slow?ms=N  -> waits N ms, then "done"
           GET /own-headers[?connection=V] -> "own", with X-App: own and,
                              when asked, the application's Connection: V
           GET /bytes/N    -> N bytes as Content ('a'..'z' repeating, ending
                              in LineEnding, which TStrings adds); with
                              ?body=stream the same bytes as ContentStream
                              (computed, so the server holds no copy)
           anything else   -> 404

  stdout:  exactly one line "listening <address>:<port>" once the listening
           socket accepts connections (the port is the real bound port, also
           with --port 0).
  stderr:  one line per served request with "conn=<id> req=<n>", one line
           with "on-allow-connect" each time the user OnAllowConnect hook runs,
           plus "connection-open" / "connection-closed" lines.
  SIGTERM: the accept loop ends; by default the program then leaves at once
           (FpExit(0)); with --stop free it runs Server.Free (what an
           application's Active:=False; Free does) and logs "stop: Free
           returned" when it returns, then exits 0 (B15: it may never
           return); a second signal then exits at once with status 3.

  Flags that the compiler's fcl-web does not support exit with status 2 and
  a message starting with "unsupported:" so a harness can skip that row.

  Windows (win64, built with scripts/fpc-trunk-win64.sh, run under Wine by
  repro/fpc/wine-server.sh): the same flags, lines and routes.  TCP_NODELAY
  is set with WinSock2.setsockopt.  Build switch -dHORSE334_UNIX_GUARD
  reproduces Horse 3.3.4's mistake (public thread "[FPC/Windows] TCP_NODELAY
  missing after 3.3.4 keep-alive"): the socket-handler mitigation is compiled
  under a Unix-only guard, so on Windows --socket-handler nodelay is accepted
  and sets nothing; on Unix the switch changes nothing.  Lines end in LF on
  Windows too (the harness reads them on Linux).

  Connection IDs: FPC 3.2.2's TFPHTTPConnection has no ConnectionID, so this
  program subclasses it (CreateConnection is virtual in 3.2.2 and in trunk)
  and numbers connection objects 1, 2, 3, ... in creation order; creation
  happens on the accepting thread, right after accept(), so the numbering is
  the accept order.  On trunk the upstream ConnectionID is logged as well
  (upstream-id=...).  Requests are counted per connection object. }

program fpserver;

{$mode objfpc}{$H+}

uses
  {$ifdef unix}cthreads, BaseUnix, Unix,{$endif}
  {$ifdef windows}WinSock2,{$endif}
  Classes, SysUtils, Sockets, ssockets, httpdefs, fphttpserver, typinfo
  {$if FPC_FULLVERSION >= 30301}, fpthreadpool{$endif};   { --pool-threads }

{$if FPC_FULLVERSION >= 30301}
  {$define TRUNK_HTTP}
{$endif}
{ The trunk compiler also builds older fcl-web trees (repro/bisect puts a
  historical commit's package folders first).  TThreadMode and the
  connection IDs came with the thread pool (2021-08-18); the published
  properties are set through RTTI (SetPublished), so this program compiles
  against any of them and says "unsupported" for what a tree lacks. }
{$if declared(TThreadMode)}
  {$define HTTP_THREADMODE}
{$endif}

{ Horse 3.3.4 wired its TCP_NODELAY socket handler (ConfigureServerTransport,
  THorseNoDelaySocketHandler) inside $IFDEF UNIX only.  SOCKET_HANDLER_WIRED
  says whether this build has that mitigation: always, unless the build asks
  for Horse 3.3.4's guard and the target is not Unix. }
{$if defined(unix) or not defined(HORSE334_UNIX_GUARD)}
  {$define SOCKET_HANDLER_WIRED}
{$endif}
{$if defined(windows) and not defined(TRUNK_HTTP)}
  {$fatal the Windows build needs fcl-web 3.3.1+ (TFPCustomHttpServer.Server, virtual FreeServerSocket)}
{$endif}

const
  ExitUnsupported = 2;

type
  TSocketHandle = Longint;

  { One connection object per accepted socket; carries our own ID. }
  TProbeConnection = class(TFPHTTPConnection)
  private
    FID: Integer;
    FRequests: Integer;
    FFd: TSocketHandle;
    FServing: Integer;
  {$ifdef HTTP_THREADMODE}
  protected
    procedure DoHandleRequest; override;
  {$endif}
  public
    constructor Create(AServer: TFPCustomHttpServer; ASocket: TSocketStream);
    destructor Destroy; override;
    function NextRequest: Integer;
    property ID: Integer read FID;
  end;

  { TCP_NODELAY in the socket handler's Accept (Horse 3.3.4's mitigation). }
  TNoDelaySocketHandler = class(TSocketHandler)
  public
    function Accept: Boolean; override;
  end;

  TProbeServer = class(TFPHttpServer)
  protected
    function CreateConnection(Data: TSocketStream): TFPHTTPConnection; override;
    {$ifdef HTTP_THREADMODE}
    function CreateConnectionHandler: TFPHTTPServerConnectionHandler; override;
    {$endif}
    {$ifdef windows}
    procedure FreeServerSocket; override;
  public
    function ListenerHandle: TSocketHandle;
    {$endif}
  public
    RequestNoDelay: Boolean;
    PoolThreads: Integer;        { --pool-threads; 0: upstream's pool size }
    FAcceptIdleCalls: LongInt;   { AcceptIdleHook's calls, counted across threads }
    procedure ServeRequest(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse);
    procedure AllowConnectNoDelay(Sender: TObject; ASocket: Longint; var Allow: Boolean);
    procedure AcceptIdleHook(Sender: TObject);
    procedure GetNoDelayHandler(Sender: TObject; const AUseSSL: Boolean;
      out AHandler: TSocketHandler);
  end;

  { Waits until the listening socket exists, then prints the contract line. }
  { /bytes/N?body=stream: a TStream whose bytes are computed, so what the
    send path copies is all a 100 MiB body costs in memory. }
  TPatternStream = class(TStream)
  private
    FSize, FPos: Int64;
  protected
    function GetSize: Int64; override;
  public
    constructor Create(ASize: Int64);
    function Read(var Buffer; Count: Longint): Longint; override;
    function Seek(const Offset: Int64; Origin: TSeekOrigin): Int64; override;
  end;

  TListenWatcher = class(TThread)
  private
    FServer: TProbeServer;
  protected
    procedure Execute; override;
  public
    constructor Create(AServer: TProbeServer);
  end;

var
  LogLock: TRTLCriticalSection;
  {$ifdef windows}
  ServerLock: TRTLCriticalSection;   { the watcher reads Server while Active may free it }
  {$endif}
  ConnCounter: Longint = 0;
  ListenAddress: string = '127.0.0.1';
  ListenPort: Integer = 0;
  ListenFd: TSocketHandle = -1;
  Stopping: Boolean = False;
  StopFree: Boolean = False;   { --stop free: Free the server as upstream does }

procedure LogLine(const S: string);
var
  Line: string;
begin
  Line := 'fpserver: ' + S + #10;   { LF on every target, see the main program }
  EnterCriticalSection(LogLock);
  try
    {$ifdef unix}
    fpWrite(2, Line[1], Length(Line));
    {$else}
    Write(StdErr, Line);
    Flush(StdErr);
    {$endif}
  finally
    LeaveCriticalSection(LogLock);
  end;
end;

function SetNoDelay(Fd: TSocketHandle): Boolean;
var
  One: Longint;
begin
  One := 1;
  {$ifdef windows}
  { WinSock2 directly, as Horse's Windows fix does (Sockets is POSIX-only
    there); under Wine this becomes setsockopt(fd, SOL_TCP, TCP_NODELAY). }
  Result := WinSock2.setsockopt(TSocket(Fd), WinSock2.IPPROTO_TCP, WinSock2.TCP_NODELAY,
    PAnsiChar(@One), SizeOf(One)) = 0;
  {$else}
  Result := fpSetSockOpt(Fd, IPPROTO_TCP, TCP_NODELAY, @One, SizeOf(One)) = 0;
  {$endif}
end;

{ TProbeConnection }

constructor TProbeConnection.Create(AServer: TFPCustomHttpServer; ASocket: TSocketStream);
begin
  inherited Create(AServer, ASocket);
  FID := InterLockedIncrement(ConnCounter);
  FRequests := 0;
  if Assigned(ASocket) then
    FFd := ASocket.Handle
  else
    FFd := -1;
  LogLine(Format('connection-open cid=%d fd=%d', [FID, FFd]));
end;

destructor TProbeConnection.Destroy;
begin
  LogLine(Format('connection-closed cid=%d served=%d', [FID, FRequests]));
  inherited Destroy;
end;

{$ifdef HTTP_THREADMODE}
{ For the hazard suite: a fix must never let two threads serve one
  connection at once.  Counted around upstream's request handling. }
procedure TProbeConnection.DoHandleRequest;
begin
  if InterLockedIncrement(FServing) <> 1 then
    LogLine(Format('error conn=%d served by two threads at once', [FID]));
  try
    inherited DoHandleRequest;
  finally
    InterLockedDecrement(FServing);
  end;
end;
{$endif}

function TProbeConnection.NextRequest: Integer;
begin
  Result := InterLockedIncrement(FRequests);
end;

{ TNoDelaySocketHandler }

function TNoDelaySocketHandler.Accept: Boolean;
var
  Ok: Boolean;
begin
  Ok := Assigned(Socket) and SetNoDelay(Socket.Handle);
  if Assigned(Socket) then
    LogLine(Format('socket-handler-accept fd=%d nodelay=%s', [Socket.Handle, BoolToStr(Ok, 'ok', 'failed')]));
  Result := True;
end;

{ TProbeServer }

function TProbeServer.CreateConnection(Data: TSocketStream): TFPHTTPConnection;
begin
  Result := TProbeConnection.Create(Self, Data);
end;

{$ifdef HTTP_THREADMODE}
{ --pool-threads N: MaxThreads N and MinThreads N - 1, the ratio that
  TFPSimpleThreadPool.Create gives ProcessorCount; set here, before the pool
  has a thread (AddTask starts them as tasks come). }
function TProbeServer.CreateConnectionHandler: TFPHTTPServerConnectionHandler;
var
  P: TFPSimpleThreadPool;
begin
  Result := inherited CreateConnectionHandler;
  if (PoolThreads > 0) and (Result is TFPPooledConnectionHandler)
     and (TFPPooledConnectionHandler(Result).Pool is TFPSimpleThreadPool) then
  begin
    P := TFPSimpleThreadPool(TFPPooledConnectionHandler(Result).Pool);
    P.MinThreads := 0;
    P.MaxThreads := PoolThreads;
    P.MinThreads := PoolThreads - 1;
  end;
end;
{$endif}

procedure TProbeServer.AcceptIdleHook(Sender: TObject);
begin
  { The first call is logged, so a run shows that the application's handler
    runs (B9: with the fix as without it); what else matters is whether the
    server still checks its connections. }
  if InterLockedIncrement(FAcceptIdleCalls) = 1 then
    LogLine('on-accept-idle: the application''s handler ran');
end;

procedure TProbeServer.AllowConnectNoDelay(Sender: TObject; ASocket: Longint; var Allow: Boolean);
var
  Ok: Boolean;
begin
  Ok := SetNoDelay(ASocket);
  LogLine(Format('on-allow-connect fd=%d nodelay=%s', [ASocket, BoolToStr(Ok, 'ok', 'failed')]));
  Allow := True;
end;

procedure TProbeServer.GetNoDelayHandler(Sender: TObject; const AUseSSL: Boolean;
  out AHandler: TSocketHandler);
begin
  if AUseSSL then
    AHandler := nil   { let the server build its TLS handler }
  else
    AHandler := TNoDelaySocketHandler.Create;
end;

{$ifdef windows}
procedure TProbeServer.FreeServerSocket;
begin
  EnterCriticalSection(ServerLock);
  try
    inherited FreeServerSocket;
  finally
    LeaveCriticalSection(ServerLock);
  end;
end;

{ The bound listener's handle, or -1; the caller holds ServerLock. }
function TProbeServer.ListenerHandle: TSocketHandle;
begin
  Result := -1;
  if Assigned(Server) and Server.Bound then
    Result := {$push}{$warn symbol_deprecated off}Server.Socket{$pop};
end;
{$endif}

{ Horse 3.3.4's ConfigureServerTransport: wires the TCP_NODELAY socket
  handler.  With -dHORSE334_UNIX_GUARD its body is Unix-only, as in 3.3.4,
  so a Windows build accepts --socket-handler nodelay and wires nothing. }
procedure ConfigureServerTransport(AServer: TProbeServer);
begin
  {$if defined(SOCKET_HANDLER_WIRED) and declared(TGetSocketHandlerEvent)}
  AServer.OnGetSocketHandler := @AServer.GetNoDelayHandler;
  {$endif}
end;

{ The /bytes/N body (DESIGN section 7): byte I of N is 'a'..'z' repeating,
  the last one a line feed. }
function PatternByte(I, N: Int64): Char;
begin
  if I = N - 1 then
    Result := #10
  else
    Result := Chr(Ord('a') + I mod 26);
end;

constructor TPatternStream.Create(ASize: Int64);
begin
  inherited Create;
  FSize := ASize;
end;

function TPatternStream.GetSize: Int64;
begin
  Result := FSize;
end;

function TPatternStream.Read(var Buffer; Count: Longint): Longint;
var
  P: PChar;
  I: Longint;
begin
  if Count > FSize - FPos then
    Count := FSize - FPos;
  if Count < 0 then
    Count := 0;
  P := @Buffer;
  for I := 0 to Count - 1 do
    P[I] := PatternByte(FPos + I, FSize);
  Inc(FPos, Count);
  Result := Count;
end;

function TPatternStream.Seek(const Offset: Int64; Origin: TSeekOrigin): Int64;
begin
  case Origin of
    soBeginning: FPos := Offset;
    soCurrent: Inc(FPos, Offset);
    soEnd: FPos := FSize + Offset;
  end;
  Result := FPos;
end;

{ GET /bytes/N: False (a 400) when N is not a size the route serves.  As
  Content, TStrings adds LineEnding to the last line, so the string is
  N - Length(LineEnding) pattern bytes and the line ending makes N. }
function ServeBytes(const Size, Query: string; AResponse: TFPHTTPConnectionResponse): Boolean;
var
  N, I: Int64;
  S: string;
begin
  N := StrToInt64Def(Size, -1);
  Result := (N >= 0) and (N <= Int64(1) shl 30) and (Size = IntToStr(N));
  if not Result then
    exit;
  AResponse.Code := 200;
  AResponse.ContentType := 'application/octet-stream';
  if Query = 'body=stream' then
  begin
    AResponse.FreeContentStream := True;
    AResponse.ContentStream := TPatternStream.Create(N);
    exit;
  end;
  if N = 0 then
    S := ''
  else if N < Length(LineEnding) then
    exit(False)
  else
  begin
    SetLength(S, N - Length(LineEnding));
    for I := 1 to Length(S) do
      S[I] := PatternByte(I - 1, N);
    S := S + LineEnding;
  end;
  AResponse.Content := S;
end;

procedure TProbeServer.ServeRequest(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
  var AResponse: TFPHTTPConnectionResponse);
var
  Path, Method, Extra, Body: string;
  Conn: TFPHTTPConnection;
  CID, ReqNo, Ms: Integer;
  HasBody: Boolean;
begin
  HasBody := False;
  Method := UpperCase(ARequest.Method);
  Path := ARequest.PathInfo;
  if Path = '' then
    Path := '/';
  Conn := ARequest.Connection;
  CID := 0;
  ReqNo := 0;
  Extra := '';
  if Conn is TProbeConnection then
  begin
    CID := TProbeConnection(Conn).ID;
    ReqNo := TProbeConnection(Conn).NextRequest;
  end;
  {$ifdef HTTP_THREADMODE}
  if Assigned(Conn) then
    Extra := ' upstream-id=' + Conn.ConnectionID;
  {$endif}
  if RequestNoDelay and Assigned(Conn) and Assigned(Conn.Socket) then
    SetNoDelay(Conn.Socket.Handle);

  if (Method = 'GET') and (Path = '/ping') then
  begin
    AResponse.Code := 200;
    Body := 'pong';
  end
  else if (Method = 'POST') and (Path = '/echo') then
  begin
    AResponse.Code := 200;
    Body := ARequest.Content;
  end
  else if (Method = 'GET') and (Path = '/own-headers') then
  begin
    { An application's own headers, which a fix that adds a Connection
      header must leave alone (repro/harness/hazards.py). }
    AResponse.SetCustomHeader('X-App', 'own');
    if ARequest.QueryFields.Values['connection'] <> '' then
      AResponse.Connection := ARequest.QueryFields.Values['connection'];
    AResponse.Code := 200;
    Body := 'own';
  end
  {$ifdef HTTP_THREADMODE}
  { Only with the thread modes: B9 needs tmPolled or tmThreadPool, and the
    oldest trees the bisect builds (2015) have no OnAcceptIdle. }
  else if (Method = 'GET') and (Path = '/set-accept-idle') then
  begin
    { An application that assigns OnAcceptIdle while the server runs (B9):
      SetIdle hands it to the listener in place of DoAcceptIdle. }
    OnAcceptIdle := @AcceptIdleHook;
    AResponse.Code := 200;
    Body := 'set';
  end
  {$endif}
  else if (Method = 'GET') and (Path = '/slow') then
  begin
    Ms := StrToIntDef(ARequest.QueryFields.Values['ms'], 0);
    if Ms > 0 then
      Sleep(Ms);
    AResponse.Code := 200;
    Body := 'done';
  end
  else if (Method = 'GET') and (Copy(Path, 1, 7) = '/bytes/') then
  begin
    HasBody := ServeBytes(Copy(Path, 8, MaxInt), ARequest.QueryString, AResponse);
    if not HasBody then
    begin
      AResponse.Code := 400;
      Body := 'bad size';
    end;
  end
  else
  begin
    AResponse.Code := 404;
    Body := 'not found';
  end;
  if not HasBody then
  begin
    AResponse.ContentType := 'text/plain';
    { A stream gives the exact bytes (Content:=... would append a line end);
      TFPHTTPConnectionResponse still writes it in DoSendContent, after the
      headers, exactly as with Contents. }
    AResponse.FreeContentStream := True;
    AResponse.ContentStream := TStringStream.Create(Body);
  end;
  LogLine(Format('conn=%d req=%d%s method=%s path=%s status=%d http=%s',
    [CID, ReqNo, Extra, Method, Path, AResponse.Code, ARequest.ProtocolVersion]));
end;

{ TListenWatcher }

constructor TListenWatcher.Create(AServer: TProbeServer);
begin
  FServer := AServer;
  inherited Create(False);
end;

{ True when Fd is a listening IPv4 socket; Port is then its bound port
  (getsockname, which also makes --port 0 work). }
function IsListening(Fd: TSocketHandle; out Port: Integer): Boolean;
var
  V: Longint;
  L: TSockLen;
  Addr: TInetSockAddr;
begin
  Result := False;
  Port := 0;
  V := 0;
  L := SizeOf(V);
  if (fpGetSockOpt(Fd, SOL_SOCKET, SO_ACCEPTCONN, @V, @L) <> 0) or (V = 0) then
    Exit;
  L := SizeOf(Addr);
  FillChar(Addr, SizeOf(Addr), 0);
  if (fpGetSockName(Fd, @Addr, @L) = 0) and (Addr.sin_family = AF_INET) then
  begin
    Port := NToHs(Addr.sin_port);
    Result := True;
  end;
end;

{ The listening socket, or -1 if it is not listening yet.  Unix: the listener
  socket is private to TFPHttpServer in 3.2.2 and Active:=True blocks in the
  accept loop, so look for the one descriptor with SO_ACCEPTCONN set.
  Windows: socket handles are not small integers, so ask the server's own
  TInetServer (trunk only). }
function FindListener(AServer: TProbeServer; out Port: Integer): TSocketHandle;
var
  Fd: TSocketHandle;
begin
  Result := -1;
  Port := 0;
  {$ifdef windows}
  EnterCriticalSection(ServerLock);
  try
    Fd := AServer.ListenerHandle;
    if (Fd <> -1) and IsListening(Fd, Port) then
      Result := Fd;
  finally
    LeaveCriticalSection(ServerLock);
  end;
  {$else}
  for Fd := 3 to 1023 do
    if IsListening(Fd, Port) then
      Exit(Fd);
  {$endif}
end;

procedure TListenWatcher.Execute;
var
  Fd: TSocketHandle;
  Port, Tries: Integer;
begin
  for Tries := 1 to 20000 do
  begin
    if Terminated or Stopping then
      Exit;
    Fd := FindListener(FServer, Port);
    if Fd <> -1 then
    begin
      ListenFd := Fd;
      ListenPort := Port;
      { #10, not WriteLn: Output is per thread, the main program's
        SetTextLineEnding does not reach this one. }
      Write(Output, 'listening ', ListenAddress, ':', ListenPort, #10);
      Flush(Output);
      Exit;
    end;
    Sleep(1);
  end;
  LogLine('error: listening socket not found');
end;

{$ifdef unix}
procedure HandleStopSignal(Sig: cint); cdecl;
const
  Second = 'fpserver: second stop signal: Free did not return; exiting with status 3'#10;
begin
  { --stop free: Free may never return (B15); a second signal leaves at
    once, saying so (async-signal-safe: write and _exit only). }
  if Stopping and StopFree then
  begin
    fpWrite(2, Second[1], Length(Second));
    FpExit(3);
  end;
  Stopping := True;
  { Unblocks accept(): the accept loop then raises, and the main program
    treats that as the requested shutdown. }
  if ListenFd >= 0 then
    fpShutdown(ListenFd, SHUT_RDWR);
end;

procedure InstallSignals;
var
  Act: SigActionRec;
begin
  FillChar(Act, SizeOf(Act), 0);
  Act.sa_handler := SigActionHandler(@HandleStopSignal);
  fpSigAction(SIGTERM, @Act, nil);
  fpSigAction(SIGINT, @Act, nil);
  FillChar(Act, SizeOf(Act), 0);
  Act.sa_handler := SigActionHandler(SIG_IGN);
  fpSigAction(SIGPIPE, @Act, nil);
end;
{$endif}

function FPCVersionString: string;
begin
  Result := {$I %FPCVERSION%};
end;

procedure Unsupported(const Flag, Why: string);
begin
  WriteLn(StdErr, 'unsupported: ', Flag, ' on FPC ', FPCVersionString, ': ', Why);
  Halt(ExitUnsupported);
end;

procedure UsageError(const Msg: string);
begin
  WriteLn(StdErr, 'fpserver: ', Msg, ' (try --help)');
  Halt(ExitUnsupported);
end;

procedure ShowHelp;
  procedure Row(const Flag, Text: string; Supported: Boolean);
  begin
    if Supported then
      WriteLn('  ', Flag, StringOfChar(' ', 34 - Length(Flag)), Text)
    else
      WriteLn('  ', Flag, StringOfChar(' ', 34 - Length(Flag)), Text, ' [unsupported here: exit 2]');
  end;
const
  Trunk = {$ifdef TRUNK_HTTP}True{$else}False{$endif};
begin
  WriteLn('fpserver - test server on the real TFPHttpServer (FPC ', FPCVersionString, ')');
  WriteLn('usage: fpserver [flags]');
  Row('--port N', 'listen port; 0 = any free port (default 0)', True);
  Row('--address A', 'listen address (default 127.0.0.1)', True);
  Row('--thread-mode none|thread', 'default none (3.2.2: maps to Threaded)', True);
  Row('--thread-mode pool|polled', 'ThreadMode tmThreadPool / polled', Trunk);
  Row('--keep-connections', 'KeepConnections:=True (default off)', Trunk);
  Row('--keep-connection-timeout MS', 'KeepConnectionTimeout (default 0)', Trunk);
  Row('--keep-connection-idle-timeout MS', 'KeepConnectionIdleTimeout (default 50)', Trunk);
  Row('--max-live-connection-count N', 'MaxLiveConnectionCount (default 128; 3.2.2 takes only 0, its one behaviour)', True);
  Row('--pool-threads N', 'tmThreadPool: MaxThreads N, MinThreads N-1 (default ProcessorCount)', Trunk);
  Row('--queue-size N', 'QueueSize, the listen backlog (default 5; --horse: 15)', True);
  Row('--accept-idle-timeout MS', 'AcceptIdleTimeout (default 0)', True);
  Row('--request-read-timeout MS', 'RequestReadTimeout (trunk: default 30000)', Trunk);
  Row('--max-body-size N', 'MaxBodySize (trunk)', Trunk);
  Row('--no-strict-ascii-url', 'StrictASCIIURL:=False (trunk: default True)', Trunk);
  Row('--on-allow-connect nodelay', 'OnAllowConnect handler: TCP_NODELAY + log', True);
  Row('--socket-handler nodelay', 'OnGetSocketHandler: handler whose Accept sets TCP_NODELAY', True);
  Row('--request-nodelay', 'TCP_NODELAY on Connection.Socket.Handle in the request handler', True);
  Row('--horse', 'Horse 3.3.4 settings (trunk: thread, keep-connections, 15000; 3.2.2: Threaded, QueueSize 15)', True);
  Row('--stop bounded|free', 'on SIGTERM: bounded leaves at once (default); free runs Server.Free (Active:=False; Destroy) and logs "stop: Free returned"', True);
  Row('--help', 'this text', True);
end;

function ArgValue(var I: Integer; const Flag: string): string;
begin
  if I >= ParamCount then
    UsageError('missing value for ' + Flag);
  Inc(I);
  Result := ParamStr(I);
end;

function ArgInt(var I: Integer; const Flag: string): Integer;
var
  S: string;
begin
  S := ArgValue(I, Flag);
  if not TryStrToInt(S, Result) or (Result < 0) then
    UsageError('bad number for ' + Flag + ': ' + S);
end;

{$ifdef TRUNK_HTTP}
{ A published property that an older fcl-web may not have yet: set through
  RTTI, or exit "unsupported" naming the flag. }
procedure SetPublished(AServer: TObject; const Name, Flag: string; Value: Int64);
begin
  if IsPublishedProp(AServer, Name) then
    SetOrdProp(AServer, Name, Value)
  else
    Unsupported(Flag, 'no ' + Name + ' in this fcl-web');
end;
{$endif}

{$ifdef HTTP_THREADMODE}
{ Enum names are looked up through RTTI so that a trunk without a polled mode
  still compiles (and answers "unsupported" for that mode at run time). }
function TrunkThreadMode(const Name: string): Integer;
  function Try1(const EnumName: string): Boolean;
  begin
    Result := False;
    if EnumName = '' then
      Exit;
    TrunkThreadMode := GetEnumValue(TypeInfo(TThreadMode), EnumName);
    Result := TrunkThreadMode >= 0;
  end;
begin
  Result := -1;
  if Name = 'none' then Try1('tmNone')
  else if Name = 'thread' then Try1('tmThread')
  else if Name = 'pool' then
  begin
    if not Try1('tmThreadPool') then Try1('tmPool');
  end
  else if Name = 'polled' then
  begin
    if not Try1('tmPolled') then Try1('tmThreadPolled');
  end;
end;
{$endif}

var
  Server: TProbeServer;
  Watcher: TListenWatcher;
  I, N: Integer;
  A, ThreadModeName, AllowConnect, SocketHandler: string;
  Horse, KeepConnections, HaveKeepTimeout, HaveIdleTimeout, HaveMaxLive, RequestNoDelay: Boolean;
  KeepTimeout, IdleTimeout, AcceptIdle, MaxLive, QueueSize, ReadTimeout, PoolThreads: Integer;
  MaxBody: Int64;
  NoStrictURL: Boolean;
  {$ifdef HTTP_THREADMODE}
  TM: Integer;
  {$endif}
begin
  InitCriticalSection(LogLock);
  {$ifdef windows}
  InitCriticalSection(ServerLock);
  { The kit reads our lines on Linux (wine-server.sh): LF, not CRLF
    (this thread's Output and StdErr; other threads write #10 themselves). }
  SetTextLineEnding(Output, #10);
  SetTextLineEnding(StdErr, #10);
  {$endif}
  ThreadModeName := '';
  AllowConnect := '';
  SocketHandler := '';
  Horse := False;
  KeepConnections := False;
  HaveKeepTimeout := False;
  HaveIdleTimeout := False;
  HaveMaxLive := False;
  RequestNoDelay := False;
  KeepTimeout := 0;
  IdleTimeout := 0;
  AcceptIdle := 0;
  MaxLive := 0;
  QueueSize := -1;
  PoolThreads := 0;
  ReadTimeout := -1;
  MaxBody := -1;
  NoStrictURL := False;

  I := 1;
  while I <= ParamCount do
  begin
    A := ParamStr(I);
    if (A = '--help') or (A = '-h') then
    begin
      ShowHelp;
      Halt(0);
    end
    else if A = '--port' then
    begin
      N := ArgInt(I, A);
      if N > 65535 then
        UsageError('bad port ' + IntToStr(N));
      ListenPort := N;
    end
    else if A = '--address' then
      ListenAddress := ArgValue(I, A)
    else if A = '--thread-mode' then
      ThreadModeName := ArgValue(I, A)
    else if A = '--keep-connections' then
      KeepConnections := True
    else if A = '--keep-connection-timeout' then
    begin
      KeepTimeout := ArgInt(I, A);
      HaveKeepTimeout := True;
    end
    else if A = '--keep-connection-idle-timeout' then
    begin
      IdleTimeout := ArgInt(I, A);
      HaveIdleTimeout := True;
    end
    else if A = '--max-live-connection-count' then
    begin
      MaxLive := ArgInt(I, A);
      HaveMaxLive := True;
    end
    else if A = '--queue-size' then
      QueueSize := ArgInt(I, A)
    else if A = '--pool-threads' then
    begin
      PoolThreads := ArgInt(I, A);
      if (PoolThreads < 1) or (PoolThreads > 256) then
        UsageError('--pool-threads must be 1..256');
    end
    else if A = '--accept-idle-timeout' then
      AcceptIdle := ArgInt(I, A)
    else if A = '--request-read-timeout' then
      ReadTimeout := ArgInt(I, A)
    else if A = '--max-body-size' then
      MaxBody := ArgInt(I, A)
    else if A = '--no-strict-ascii-url' then
      NoStrictURL := True
    else if A = '--on-allow-connect' then
      AllowConnect := ArgValue(I, A)
    else if A = '--socket-handler' then
      SocketHandler := ArgValue(I, A)
    else if A = '--request-nodelay' then
      RequestNoDelay := True
    else if A = '--stop' then
    begin
      A := ArgValue(I, A);
      if (A <> 'bounded') and (A <> 'free') then
        UsageError('--stop must be bounded or free');
      StopFree := A = 'free';
    end
    else if A = '--horse' then
    begin
      { Horse 3.3.4: thread mode thread; on FPC >= 3.3.1 also keep-connections
        with a 15000 ms timeout; later flags override. }
      Horse := True;
      ThreadModeName := 'thread';
      {$ifdef TRUNK_HTTP}
      KeepConnections := True;
      KeepTimeout := 15000;
      HaveKeepTimeout := True;
      {$endif}
    end
    else
      UsageError('unknown flag ' + A);
    Inc(I);
  end;

  if (AllowConnect <> '') and (AllowConnect <> 'nodelay') then
    UsageError('--on-allow-connect accepts only "nodelay"');
  if (SocketHandler <> '') and (SocketHandler <> 'nodelay') then
    UsageError('--socket-handler accepts only "nodelay"');
  if (ThreadModeName <> '') and (ThreadModeName <> 'none') and (ThreadModeName <> 'thread')
     and (ThreadModeName <> 'pool') and (ThreadModeName <> 'polled') then
    UsageError('--thread-mode must be none, thread, pool or polled');

  {$ifndef TRUNK_HTTP}
  if KeepConnections then
    Unsupported('--keep-connections', 'TFPHttpServer has no KeepConnections before FPC 3.3.1 (one request per connection)');
  if HaveKeepTimeout then
    Unsupported('--keep-connection-timeout', 'no KeepConnectionTimeout before FPC 3.3.1');
  if HaveIdleTimeout then
    Unsupported('--keep-connection-idle-timeout', 'no KeepConnectionIdleTimeout before FPC 3.3.1');
  { No connection cap before 3.3.1: 0 (no cap) is what 3.2.2 always does. }
  if ReadTimeout >= 0 then
    Unsupported('--request-read-timeout', 'no RequestReadTimeout before FPC 3.3.1');
  if MaxBody >= 0 then
    Unsupported('--max-body-size', 'no MaxBodySize before FPC 3.3.1');
  if NoStrictURL then
    Unsupported('--no-strict-ascii-url', 'no StrictASCIIURL before FPC 3.3.1');
  if HaveMaxLive and (MaxLive <> 0) then
    Unsupported('--max-live-connection-count', 'no MaxLiveConnectionCount before FPC 3.3.1 (only 0, no cap)');
  if (ThreadModeName = 'pool') or (ThreadModeName = 'polled') then
    Unsupported('--thread-mode ' + ThreadModeName, 'only Threaded (none|thread) exists before FPC 3.3.1');
  {$endif}
  {$ifndef HTTP_THREADMODE}
  if PoolThreads > 0 then
    Unsupported('--pool-threads', 'no thread pool in this fcl-web');
  {$endif}

  Server := TProbeServer.Create(nil);
  try
    Server.Address := ListenAddress;
    Server.Port := ListenPort;
    Server.OnRequest := @Server.ServeRequest;
    Server.RequestNoDelay := RequestNoDelay;
    {$ifdef TRUNK_HTTP}
    if AcceptIdle > 0 then   { 0 is the default; not there before 2016-05-21 }
      SetPublished(Server, 'AcceptIdleTimeout', '--accept-idle-timeout', AcceptIdle);
    {$else}
    Server.AcceptIdleTimeout := AcceptIdle;
    {$endif}
    if Horse and (QueueSize < 0) then
      QueueSize := 15;
    if QueueSize >= 0 then
      Server.QueueSize := QueueSize;
    if AllowConnect = 'nodelay' then
      Server.OnAllowConnect := @Server.AllowConnectNoDelay;
    if SocketHandler = 'nodelay' then
      {$if declared(TGetSocketHandlerEvent)}
      ConfigureServerTransport(Server);
      {$else}   { before 2019-01-05 (an older fcl-web tree) }
      Unsupported('--socket-handler', 'no OnGetSocketHandler in this fcl-web');
      {$endif}
    {$ifdef TRUNK_HTTP}
    {$ifdef HTTP_THREADMODE}
    if ThreadModeName <> '' then
    begin
      TM := TrunkThreadMode(ThreadModeName);
      if TM < 0 then
        Unsupported('--thread-mode ' + ThreadModeName, 'no matching TThreadMode value in this fcl-web');
      Server.PoolThreads := PoolThreads;   { read as the mode makes the pool }
      Server.ThreadMode := TThreadMode(TM);
    end;
    {$else}
    if (ThreadModeName = 'pool') or (ThreadModeName = 'polled') then
      Unsupported('--thread-mode ' + ThreadModeName, 'no ThreadMode in this fcl-web (only Threaded)');
    Server.Threaded := ThreadModeName = 'thread';
    {$endif}
    { Published on trunk 1dba64b, absent from older fcl-web trees: through
      RTTI, so this program still compiles there (and says "unsupported"). }
    if KeepConnections then
      SetPublished(Server, 'KeepConnections', '--keep-connections', 1);
    if HaveKeepTimeout then
      SetPublished(Server, 'KeepConnectionTimeout', '--keep-connection-timeout', KeepTimeout);
    if HaveIdleTimeout then
      SetPublished(Server, 'KeepConnectionIdleTimeout', '--keep-connection-idle-timeout', IdleTimeout);
    { Public, not published: its default constant came with it. }
    if HaveMaxLive then
      {$if declared(DefaultMaxLiveConnectionCount)}
      Server.MaxLiveConnectionCount := MaxLive;
      {$else}
      if MaxLive <> 0 then   { no cap: what a tree without one always does }
        Unsupported('--max-live-connection-count', 'no MaxLiveConnectionCount in this fcl-web (only 0, no cap)');
      {$endif}
    { 0 disables the per-read time-out; a tree without RequestReadTimeout
      never had one, so 0 is what it does anyway. }
    if (ReadTimeout > 0) or ((ReadTimeout = 0) and IsPublishedProp(Server, 'RequestReadTimeout')) then
      SetPublished(Server, 'RequestReadTimeout', '--request-read-timeout', ReadTimeout);
    if NoStrictURL then
      SetPublished(Server, 'StrictASCIIURL', '--no-strict-ascii-url', 0);
    if MaxBody >= 0 then
      {$if declared(DefaultMaxBodySize)}
      Server.MaxBodySize := MaxBody;
      {$else}
      Unsupported('--max-body-size', 'no MaxBodySize in this fcl-web');
      {$endif}
    {$else}
    Server.Threaded := ThreadModeName = 'thread';
    {$endif}

    {$ifdef unix}
    InstallSignals;
    {$endif}
    LogLine(Format('config fpc=%s thread-mode=%s allow-connect-hook=%s socket-handler=%s request-nodelay=%s',
      [FPCVersionString, ThreadModeName, AllowConnect, SocketHandler, BoolToStr(RequestNoDelay, 'on', 'off')]));
    Watcher := TListenWatcher.Create(Server);
    try
      try
        Server.Active := True;   { blocks in the accept loop }
      except
        on E: Exception do
          if not Stopping then
          begin
            LogLine('error: ' + E.ClassName + ': ' + E.Message);
            ExitCode := 1;
          end;
      end;
    finally
      Watcher.Terminate;
      Watcher.WaitFor;
      Watcher.Free;
    end;
    if Stopping and StopFree then
      { What an application's Active:=False; Free does: TFPCustomHttpServer.
        Destroy waits for the connections with no bound (B15). }
      LogLine('stop: accept loop ended; Free')
    else if Stopping then
    begin
      { Leave at once: 3.2.2's destructor waits (unbounded) for connection
        threads, and a thread that met the POST+GET heap overrun (see
        FINDINGS-3.2.2.md) may never report back. }
      LogLine('stopping on signal');
      Flush(Output);
      {$ifdef unix}
      FpExit(0);
      {$else}
      Halt(0);
      {$endif}
    end;
  finally
    Server.Free;
  end;
  if Stopping and StopFree then
    LogLine('stop: Free returned');
  DoneCriticalSection(LogLock);
end.
