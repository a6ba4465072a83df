unit tcfphttpserver;

{ Tests of the HTTP/1.1 connection path of TFPHttpServer: accepting,
  keep-alive, pipelining, request bodies, the thread modes and the socket
  waits.

  Every test runs a real TFPHttpServer on 127.0.0.1 (port 0) in a thread of
  its own and talks to it over raw TCP sockets, writing the requests byte for
  byte. The verdicts are counts and orderings: responses answered before the
  server closed the connection, writes per response, hook calls. No test
  waits for a fixed time. Every wait for the server is bounded by WatchdogMs
  (the client sockets' read time-out, or an event wait), which turns a hang
  into a failure with a message, so the run always ends.

  Each test stands alone: it passes or fails the same run alone, in
  declaration order or in any other. Whatever it takes (the server and its
  threads, client sockets and threads, a raised descriptor limit) it gives
  back in TearDown, also when the defect it looks for is there. }

{$mode objfpc}{$H+}

interface

uses
  {$IFDEF UNIX}BaseUnix,{$ENDIF}
  Classes, SysUtils, TypInfo, syncobjs, sockets, fpsockets, ssockets, fpcunit, testregistry,
  httpdefs, fphttpserver, fpthreadpool;

const
  // Bounds every wait for the server. A server that answers does so within
  // milliseconds; only a request the server never answers meets this bound.
  WatchdogMs = 5000;
  // The keep-alive load of the tmThreadPool tests: pool workers + LoadExtraClients
  // clients, each sending requests back to back for LoadMs and on until one of
  // them has LoadTarget answers (a slow server, e.g. under Wine on a loaded
  // machine, answered only 1 or 2 a client in LoadMs), at most LoadBoundMs.
  // The counts decide; the times only end the run.
  LoadExtraClients = 4;
  LoadMs = 1000;
  LoadTarget = 24;
  LoadBoundMs = 10000;
  // Fair sharing: every client answered at least FairMinAnswered times, the
  // least-served at least 1/FairSpread as often as the most-served.
  FairMinAnswered = 3;
  FairSpread = 4;
  // How long TearDown lets the server close the connections of the clients it
  // closed before it unwedges a server the defect may have stuck.
  CloseWaitMs = 1000;
  // Bounds TFPHttpServer.Free, which waits for the connections it has before
  // it closes them (WaitForRequests: 10 looks 100 ms apart without a change).
  FreeWatchdogMs = 2 * WatchdogMs;
  // The time-outs of a server whose Free is tested: far beyond the run, so
  // that none of them can end a wait that keeps Free from returning.
  FarTimeoutMs = 600000;

type
  TTestHTTPServerConnection = class;

  TWriteLog = array of Boolean;   // per write: was TCP_NODELAY on?

  { The socket handler of every accepted connection (OnGetSocketHandler):
    it tells the test what the server does with the socket and passes every
    call on unchanged. }

  TRecordingSocketHandler = class(TSocketHandler)
  private
    FOwner: TTestHTTPServerConnection;
    FNoDelayAtSend: TWriteLog;
    FReceived: Int64;               // bytes Recv returned so far
    FReadEnd: Integer;              // under FOwner.FLock: 0 reading, 1 its client's end, 2 a read error
    FWaitThread: TThreadID;         // the thread of the first wait for bytes, and
    FHeapAtFirstWait: PtrUInt;      // its heap in use then (GetFPCHeapStatus)
    procedure WaitingForBytes;
  public
    destructor Destroy; override;
    function Accept: Boolean; override;
    function CanRead(TimeOut: Integer): Boolean; override;
    function Recv(const Buffer; Count: Integer): Integer; override;
    function Send(const Buffer; Count: Integer): Integer; override;
  end;

  { The server under test: tells the test its bound port once it listens,
    and when a connection object is made or freed. }

  TTestHTTPServer = class(TFPHttpServer)
  private
    FOwner: TTestHTTPServerConnection;
    FBoundPort: Word;
  protected
    procedure StartServerSocket; override;
    function CreateConnection(Data: TSocketStream): TFPHTTPConnection; override;
  public
    // Workers of the tmThreadPool pool (valid once the server listens).
    function PoolMaxThreads: Integer;
    // Lets a server that is stuck with connections its clients have closed free them.
    procedure Unwedge;
    property BoundPort: Word read FBoundPort;
    property MaxLiveConnectionCount;
    property Send503OnMaxConnections;
  end;

  { Counts the threads in its request handling: a connection must be served
    by one thread at a time. }

  TTestHTTPConnection = class(TFPHTTPConnection)
  private
    FServing: Integer;
    FOwner: TTestHTTPServerConnection;   // the server may be gone when it is freed
  protected
    procedure DoHandleRequest; override;
  public
    destructor Destroy; override;
  end;

  { A thread that does one thing with a server, then sets FDone; an
    exception is kept in FError. }

  TServerWorkThread = class(TThread)
  protected
    FServer: TTestHTTPServer;
    FDone: TSimpleEvent;
    FError: string;
  public
    constructor Create(aServer: TTestHTTPServer);
    destructor Destroy; override;
  end;

  { Runs Active:=True, which returns only when the server stops accepting. }

  TServerThread = class(TServerWorkThread)
  protected
    procedure Execute; override;
  end;

  { Runs Free on a server, so that the test can bound the wait for it. The
    test's thread, the main thread, runs what the server's threads
    Synchronize meanwhile (the pool's workers do as they end), as it would
    in Free itself; the thread's own Synchronize at the end wakes it. }

  TServerFreeThread = class(TServerWorkThread)
  private
    procedure Wake;
  protected
    procedure Execute; override;
  end;

  TClientRead = (crResponse, crClosed, crReset, crWatchdog, crError);

  TTestResponse = record
    Code: Integer;
    Connection: string;
    Body: string;
    ContentLength: Integer;   // its Content-Length (0 if none)
    Lead: Integer;            // bytes before its status line (all of its head if none)
  end;

  { What the application was given for a request (HandleRequest, when the
    test asks for it). }

  TSeenRequest = record
    PathInfo, URL, QueryString, QueryX, Host: string;
  end;

  { A raw TCP client: writes bytes, reads and parses responses. }

  TTestClient = class
  private
    FSocket: TInetSocket;
    FBuffer: RawByteString;
    FError: Integer;
    FHeadOnly: Boolean;
    function TakeResponse(out aResponse: TTestResponse): Boolean;
  public
    constructor Create(aPort: Word);
    destructor Destroy; override;
    // One write of all of aData.
    procedure Send(const aData: RawByteString);
    // Ends the client's stream (shutdown of the write side); reading goes on.
    procedure ShutdownWrite;
    // The next response; the watchdog runs from the call.
    function ReadResponse(out aResponse: TTestResponse): TClientRead;
    // The next response's head, as a client reads the response to a HEAD:
    // no content, whatever its Content-Length; what follows stays unread.
    function ReadHead(out aResponse: TTestResponse): TClientRead;
    // The next response, if it comes before aDeadline (GetTickCount64).
    function ReadResponseBy(aDeadline: QWord; out aResponse: TTestResponse): TClientRead;
    // Responses read until aWanted, or until the connection ends or the watchdog.
    function ReadResponses(aWanted: Integer; out aLast: TClientRead; out aBodies: string): Integer;
    function Describe(aRead: TClientRead): string;
  end;

  { A client of the keep-alive load: sends a request, reads its response, and
    again, on one connection until its time is up or a request is not
    answered. }

  TLoadClient = class(TThread)
  private
    FOwner: TTestHTTPServerConnection;
    FClient: TTestClient;
    FEndTick, FBoundTick: QWord;
    FAnswered: Integer;
    FLast: TClientRead;
    FError: string;
  protected
    procedure Execute; override;
  public
    constructor Create(aOwner: TTestHTTPServerConnection; aClient: TTestClient; aEndTick: QWord);
    function Outcome: string;
    property Answered: Integer read FAnswered;
  end;

  TLoadCounts = array of Integer;

  { One published test per connection-handling defect, each named for the
    behaviour it expects. The synchronisation objects live as long as the
    test case object, not the test: a server thread may still be leaving one
    (an event it has just set, a lock it is about to release) when the test
    frees the server. }

  TTestHTTPServerConnection = class(TTestCase)
  private
    FServer: TTestHTTPServer;
    FThread: TServerThread;
    FClients: TFPList;
    FLock: TCriticalSection;
    FHandlers: TFPList;              // per accepted connection, in accept order; Nil once freed
    FAcceptedFds: array of Integer;  // per accepted connection, in accept order
    FAcceptCount: Integer;
    FAccepted: TSimpleEvent;
    FListening: TSimpleEvent;
    FLive: Integer;                  // connection objects not yet freed
    FNoConnections: TSimpleEvent;
    FAllowConnectCalls: Integer;
    FHoldEntered: Integer;
    FHoldChanged: TSimpleEvent;
    FReleaseHeld: TSimpleEvent;
    FIdleCheckWatch: TRecordingSocketHandler;
    FIdleCheckSawRequest: TSimpleEvent;
    FIdleTicks: Integer;             // OnAcceptIdle calls
    FIdleChanged: TSimpleEvent;      // an accept-idle tick, or the check saw the watched request
    FOverlaps: Integer;              // requests handled while another thread handled the same connection
    FLoadDone: Integer;              // load clients that have finished
    FLoadReached: Integer;           // 1 once a load client has LoadTarget answers
    FLoadChanged: TSimpleEvent;
    FRequestsHandled: Integer;       // OnRequest calls
    FRequestErrors: Integer;         // OnRequestError calls
    FWaitWatch: TRecordingSocketHandler;  // the connection whose waits for bytes are watched
    FWaitWatchBytes: Int64;          // a wait counts once this many bytes were received
    FWaitsSeen: Integer;             // waits of the watched connection that counted
    FWaitHeapGrowth: Int64;          // its thread's heap in use at the first of them, less at its first wait
    FWaitChanged: TSimpleEvent;
    FAbandoned: Boolean;
    FTestFailure: string;            // the message of the test's own failure, for TearDown's
    FNoDelayAtAccept: Boolean;       // the test's socket handler sets TCP_NODELAY (the hazard tests)
    FRecordRequests: Boolean;        // HandleRequest keeps what it was given in FSeen
    FSeen: TSeenRequest;             // the last request's, under FLock
{$IFDEF UNIX}
    FSavedNoFile: TRLimit;           // RLIMIT_NOFILE before a test raised it
    FNoFileRaised: Boolean;
{$ENDIF}
    // Called from server threads.
    procedure ConnectionMade;
    procedure ConnectionGone;
    procedure ConnectionOverlap;
    procedure LoadClientDone;
    procedure CountAcceptIdle(Sender: TObject);
    procedure HandlerAccepted(aHandler: TRecordingSocketHandler);
    procedure HandlerGone(aHandler: TRecordingSocketHandler);
    procedure HandlerReadEnded(aHandler: TRecordingSocketHandler; aResult: Integer);
    function OpenConnections: string;
    procedure HandlerSawData(aHandler: TRecordingSocketHandler);
    procedure HandlerSent(aHandler: TRecordingSocketHandler; aNoDelay: Boolean);
    procedure HandlerWaits(aHandler: TRecordingSocketHandler; aHeapGrowth: Int64);
    procedure GetSocketHandler(Sender: TObject; const UseSSL: Boolean; out AHandler: TSocketHandler);
    procedure CountAllowConnect(Sender: TObject; ASocket: Longint; var Allow: Boolean);
    procedure CountRequestError(Sender: TObject; E: Exception);
    procedure HandleRequest(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse);
    // Test helpers.
    function WaitForCount(var aCount: Integer; aTarget: Integer; aEvent: TSimpleEvent;
      aTimeoutMs: Integer = WatchdogMs): Boolean;
    function Counted(var aCount: Integer): Integer;
    procedure RunKeepAliveLoad(out aWorkers: Integer; out aAnswered: TLoadCounts; out aOutcomes: string);
    procedure UseKeepAlivePool;
    function AcceptedFd(aIndex: Integer): Integer;
    procedure WatchIdleCheck(aIndex: Integer);
    procedure WatchWaits(aIndex: Integer; aBytes: Int64);
    function WritesOf(aIndex, aFrom: Integer): TWriteLog;
    procedure UseKeepAliveThreads(aKeepConnectionTimeout: Integer);
    function NewServer: TTestHTTPServer;
    procedure StartServer;
    procedure StopServer;
    procedure WakeAcceptor;
    function Connect: TTestClient;
  protected
    procedure SetUp; override;
    procedure RunTest; override;
    procedure TearDown; override;
  public
    constructor Create; override;
    destructor Destroy; override;
  published
    procedure TestAllowConnectHookIsCalled;
    procedure TestPipelinedRequestsAllAnswered;
    procedure TestShortResponseIsNotHeldBehindHeader;
    procedure TestServerAnnouncesClose;
    procedure TestBodyDoesNotSwallowNextRequest;
    procedure TestPoolAnswersSecondKeepAliveRequest;
    procedure TestPoolIdleCheckDoesNotBlockFinishingWorkers;
    procedure TestConnectionAboveFD1024IsRead;
    procedure TestAcceptIdleHandlerKeepsConnectionsChecked;
    procedure TestExpectContinueIsAnsweredBeforeTheBody;
    procedure TestAmbiguousFramingIsRejected;
    procedure TestBodyIsReadAsItArrives;
    procedure TestConnectionOptionsDecideKeepAlive;
    procedure TestHeadResponseHasNoContent;
    procedure TestFreeReturnsWhileClientsStayConnected;
    procedure TestRequestErrorsAreAnswered;
    procedure TestRequestHeadHasADeadline;
    procedure TestEmptyLinesBeforeRequestAreIgnored;
    procedure TestConnectionLimitAnswerSaysItsLength;
    procedure TestAbsoluteFormTarget;
    procedure TestPolledServesKeptAliveRequestOnArrival;
    // What a fix of the pool must not break.
    procedure TestPoolSharesWorkersBetweenKeepAliveClients;
    procedure TestPoolServesConnectionOnOneThreadAtATime;
    // What a patch adds, or must not break.
    procedure TestTCPNoDelayCanBeSwitchedOff;
    procedure TestContentSetAfterOwnHeadersIsSent;
  end;

implementation

const
  CRLF = #13#10;
{$IFDEF UNIX}
  // A TFDSet (select()) holds descriptors 0..1023 only.
  SelectSetSize = 1024;
{$ENDIF}
{$IFDEF WINDOWS}
  ErrTimedOut = 10060;   // WSAETIMEDOUT: the read time-out expired
  ErrReset = 10054;      // WSAECONNRESET
{$ELSE}
  ErrTimedOut = ESysEAGAIN;
  ErrReset = ESysECONNRESET;
{$ENDIF}

function Get(const aPath: string; const aExtraHeaders: string = ''): string;
begin
  Result := 'GET ' + aPath + ' HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + aExtraHeaders + CRLF;
end;

{ A write to a connection the peer has closed must fail with EPIPE, not raise
  SIGPIPE, which would end the test run: MSG_NOSIGNAL on every write where
  the platform has it, else SO_NOSIGPIPE on the socket (Darwin). Windows has
  no SIGPIPE. }

procedure NoSigPipe(aSocket: TSocketStream);
{$IF DEFINED(UNIX) and not DECLARED(MSG_NOSIGNAL) and DECLARED(SO_NOSIGPIPE)}
var
  One: Longint;
{$ENDIF}
begin
{$IFDEF UNIX}
{$IF DECLARED(MSG_NOSIGNAL)}
  aSocket.WriteFlags := aSocket.WriteFlags or MSG_NOSIGNAL;
{$ELSEIF DECLARED(SO_NOSIGPIPE)}
  One := 1;
  fpsetsockopt(aSocket.Handle, SOL_SOCKET, SO_NOSIGPIPE, @One, SizeOf(One));
{$ELSE}
  {$WARNING a write to a closed connection raises SIGPIPE on this platform}
{$ENDIF}
{$ENDIF}
end;

function NoDelayIsOn(aHandle: Longint): Boolean;
var
  V: Longint;
  L: TSockLen;
begin
  V := 0;
  L := SizeOf(V);
  Result := (fpgetsockopt(aHandle, IPPROTO_TCP, TCP_NODELAY, @V, @L) = 0) and (V <> 0);
end;

procedure SetNoDelay(aHandle: Longint);
var
  V: Longint;
begin
  V := 1;
  fpsetsockopt(aHandle, IPPROTO_TCP, TCP_NODELAY, @V, SizeOf(V));
end;

{ TRecordingSocketHandler }

destructor TRecordingSocketHandler.Destroy;
begin
  if Assigned(FOwner) then
    FOwner.HandlerGone(Self);
  inherited Destroy;
end;

function TRecordingSocketHandler.Accept: Boolean;
begin
  Result := inherited Accept;
  // The server's own writes to a client that has left, where it does not prevent SIGPIPE itself.
  NoSigPipe(Socket);
  if Assigned(FOwner) and FOwner.FNoDelayAtAccept then
    SetNoDelay(Socket.Handle);
  if Assigned(FOwner) then
    FOwner.HandlerAccepted(Self);
end;

{ Where the server waits for bytes (a CanRead or Recv): the heap in use on
  its thread, from the thread's first wait on, for a watched connection. The
  RTL's heap counts the blocks of each thread, and a large block of any
  thread, in GetFPCHeapStatus.CurrHeapUsed. }

procedure TRecordingSocketHandler.WaitingForBytes;
begin
  if FWaitThread <> GetCurrentThreadId then
  begin
    FWaitThread := GetCurrentThreadId;
    FHeapAtFirstWait := GetFPCHeapStatus.CurrHeapUsed;
  end
  else if Assigned(FOwner) and (FOwner.FWaitWatch = Self) then
    FOwner.HandlerWaits(Self, Int64(GetFPCHeapStatus.CurrHeapUsed) - Int64(FHeapAtFirstWait));
end;

function TRecordingSocketHandler.CanRead(TimeOut: Integer): Boolean;
begin
  WaitingForBytes;
  Result := inherited CanRead(TimeOut);
  if Result and Assigned(FOwner) then
    FOwner.HandlerSawData(Self);
end;

function TRecordingSocketHandler.Recv(const Buffer; Count: Integer): Integer;
begin
  WaitingForBytes;
  Result := inherited Recv(Buffer, Count);
  if Result > 0 then
    Inc(FReceived, Result)
  else if (Count > 0) and Assigned(FOwner) then
    FOwner.HandlerReadEnded(Self, Result);
end;

function TRecordingSocketHandler.Send(const Buffer; Count: Integer): Integer;
begin
  // Recorded before the write, so a client that has the bytes finds it counted.
  if Assigned(FOwner) then
    FOwner.HandlerSent(Self, NoDelayIsOn(Socket.Handle));
  Result := inherited Send(Buffer, Count);
end;

{ TTestHTTPServer }

procedure TTestHTTPServer.StartServerSocket;
var
  Addr: TInetSockAddr;
  L: TSockLen;
begin
  // As inherited, with the bound port (port 0) published between listen() and accept().
  Server.Listen;
  L := SizeOf(Addr);
  FillChar(Addr, SizeOf(Addr), 0);
  if fpgetsockname(Server.FPSocket.FD, @Addr, @L) = 0 then
    FBoundPort := NToHs(Addr.sin_port);
  FOwner.FListening.SetEvent;
  Server.StartAccepting;
end;

function TTestHTTPServer.CreateConnection(Data: TSocketStream): TFPHTTPConnection;
begin
  FOwner.ConnectionMade;
  Result := TTestHTTPConnection.Create(Self, Data);
  TTestHTTPConnection(Result).FOwner := FOwner;
end;

function TTestHTTPServer.PoolMaxThreads: Integer;
begin
  Result := ((Connectionhandler as TFPPooledConnectionHandler).Pool as TFPSimpleThreadPool).MaxThreads;
end;

{ Called by the test, with every client closed, when the server does not free
  their connections: what the test found may keep it from doing so.
  tmThreadPool: a task may be waiting in AddTask for a worker while every
  worker waits for the connection list that the waiting thread holds (B7):
  more workers let it go on. A pool without an accept-idle tick never looks
  at a kept-alive connection again (B6): a tick lets CheckRequests find the
  closed ones. A listener whose idle handler the application replaced (B9)
  gets DoAcceptIdle back. }

procedure TTestHTTPServer.Unwedge;
var
  P: TFPSimpleThreadPool;
begin
  // B9: assigning OnAcceptIdle may have made it the listener's idle handler in
  // place of DoAcceptIdle, which checks the connections (and calls OnAcceptIdle).
  if Assigned(Server) then
    Server.OnIdle := @DoAcceptIdle;
  // B21: a tmPolled server that looks at its connections only on the accept-idle
  // tick reaps the closed ones on it; the test's tick is far beyond the run.
  if (ThreadMode = tmPolled) and Assigned(Server)
     and (Server.AcceptIdleTimeOut > DefaultPolledAcceptIdleTimeout) then
  begin
    Server.AcceptIdleTimeOut := 10;
    FOwner.WakeAcceptor;
  end;
  if ThreadMode <> tmThreadPool then
    Exit;
  P := (Connectionhandler as TFPPooledConnectionHandler).Pool as TFPSimpleThreadPool;
  P.MaxThreads := P.MaxThreads + FOwner.Counted(FOwner.FLive) + 1;
  if Server.AcceptIdleTimeOut = 0 then
  begin
    Server.AcceptIdleTimeOut := 10;
    FOwner.WakeAcceptor;   // the loop takes the tick once its accept() returns
  end;
end;

{ TTestHTTPConnection }

procedure TTestHTTPConnection.DoHandleRequest;
begin
  if (InterLockedIncrement(FServing) <> 1) and (Server is TTestHTTPServer) then
    TTestHTTPServer(Server).FOwner.ConnectionOverlap;
  try
    inherited DoHandleRequest;
  finally
    InterLockedDecrement(FServing);
  end;
end;

destructor TTestHTTPConnection.Destroy;
var
  O: TTestHTTPServerConnection;
begin
  // Not through Server: a server being freed may be gone before its connections.
  O := FOwner;
  inherited Destroy;
  // Last: once the count is 0 the test may free the server.
  if Assigned(O) then
    O.ConnectionGone;
end;

{ TServerWorkThread }

constructor TServerWorkThread.Create(aServer: TTestHTTPServer);
begin
  FServer := aServer;
  FDone := TSimpleEvent.Create;
  FreeOnTerminate := False;
  inherited Create(False);
end;

destructor TServerWorkThread.Destroy;
begin
  FreeAndNil(FDone);
  inherited Destroy;
end;

{ TServerThread }

procedure TServerThread.Execute;
begin
  try
    FServer.Active := True;
  except
    on E: Exception do
      FError := E.ClassName + ': ' + E.Message;
  end;
  FDone.SetEvent;
end;

{ TServerFreeThread }

procedure TServerFreeThread.Wake;
begin
end;

procedure TServerFreeThread.Execute;
begin
  try
    FServer.Free;
  except
    on E: Exception do
      FError := E.ClassName + ': ' + E.Message;
  end;
  FDone.SetEvent;
  Synchronize(@Wake);
end;

{ TTestClient }

constructor TTestClient.Create(aPort: Word);
begin
  FSocket := TInetSocket.Create('127.0.0.1', aPort);
  // The watchdog: a read that gets nothing for this long returns an error.
  FSocket.IOTimeout := WatchdogMs;
  NoSigPipe(FSocket);
end;

destructor TTestClient.Destroy;
begin
  FreeAndNil(FSocket);
  inherited Destroy;
end;

procedure TTestClient.Send(const aData: RawByteString);
begin
  if FSocket.Write(aData[1], Length(aData)) <> Length(aData) then
    raise Exception.CreateFmt('client write of %d bytes failed (error %d)', [Length(aData), FSocket.LastError]);
end;

procedure TTestClient.ShutdownWrite;
begin
  if fpshutdown(FSocket.Handle, SHUT_WR) <> 0 then
    raise Exception.CreateFmt('client shutdown of its write side failed (error %d)', [SocketError]);
end;

function TTestClient.TakeResponse(out aResponse: TTestResponse): Boolean;
var
  Head: TStringList;
  P, I, Len: Integer;
  N, V: string;
begin
  aResponse := Default(TTestResponse);
  P := Pos(CRLF + CRLF, FBuffer);
  if P = 0 then
    Exit(False);
  Len := 0;
  Head := TStringList.Create;
  try
    Head.Text := Copy(FBuffer, 1, P - 1);
    if Head.Count > 0 then
      aResponse.Code := StrToIntDef(Copy(Head[0], 10, 3), 0);
    for I := 1 to Head.Count - 1 do
    begin
      N := LowerCase(Trim(Copy(Head[I], 1, Pos(':', Head[I]) - 1)));
      V := Trim(Copy(Head[I], Pos(':', Head[I]) + 1, MaxInt));
      if N = 'content-length' then
        Len := StrToIntDef(V, 0)
      else if N = 'connection' then
        aResponse.Connection := V;
    end;
  finally
    Head.Free;
  end;
  aResponse.ContentLength := Len;
  aResponse.Lead := Pos('HTTP/', Copy(FBuffer, 1, P)) - 1;
  if aResponse.Lead < 0 then
    aResponse.Lead := P - 1;
  if FHeadOnly then
    Len := 0;
  if Length(FBuffer) < P + 3 + Len then
    Exit(False);
  aResponse.Body := Copy(FBuffer, P + 4, Len);
  Delete(FBuffer, 1, P + 3 + Len);
  Result := True;
end;

function TTestClient.ReadResponse(out aResponse: TTestResponse): TClientRead;
begin
  Result := ReadResponseBy(GetTickCount64 + WatchdogMs, aResponse);
end;

function TTestClient.ReadHead(out aResponse: TTestResponse): TClientRead;
begin
  FHeadOnly := True;
  try
    Result := ReadResponse(aResponse);
  finally
    FHeadOnly := False;
  end;
end;

function TTestClient.ReadResponseBy(aDeadline: QWord; out aResponse: TTestResponse): TClientRead;
var
  Buf: array[0..4095] of AnsiChar;
  Chunk: RawByteString;
  N: Integer;
  Left: Int64;
begin
  while not TakeResponse(aResponse) do
  begin
    Left := Int64(aDeadline) - Int64(GetTickCount64);
    if Left <= 0 then
      Exit(crWatchdog);
    // The socket's read time-out is what is left of the watchdog.
    FSocket.IOTimeout := Left;
    N := FSocket.Read(Buf, SizeOf(Buf));
    if N > 0 then
    begin
      SetString(Chunk, PAnsiChar(@Buf[0]), N);
      FBuffer := FBuffer + Chunk;
    end
    else if N = 0 then
      Exit(crClosed)
    else
    begin
      FError := FSocket.LastError;
      if FError = ErrTimedOut then
        Exit(crWatchdog)
      else if FError = ErrReset then
        Exit(crReset)
      else
        Exit(crError);
    end;
  end;
  Result := crResponse;
end;

function TTestClient.ReadResponses(aWanted: Integer; out aLast: TClientRead; out aBodies: string): Integer;
var
  R: TTestResponse;
begin
  Result := 0;
  aBodies := '';
  aLast := crResponse;
  while Result < aWanted do
  begin
    aLast := ReadResponse(R);
    if aLast <> crResponse then
      Exit;
    Inc(Result);
    aBodies := aBodies + Trim(R.Body) + ';';
  end;
end;

function TTestClient.Describe(aRead: TClientRead): string;
begin
  case aRead of
    crResponse: Result := 'answered';
    crClosed: Result := 'was closed by the server';
    crReset: Result := 'was reset by the server';
    crWatchdog: Result := Format('got nothing within the %d ms watchdog', [WatchdogMs]);
  else
    Result := Format('failed with socket error %d', [FError]);
  end;
end;

{ TLoadClient }

constructor TLoadClient.Create(aOwner: TTestHTTPServerConnection; aClient: TTestClient; aEndTick: QWord);
begin
  FOwner := aOwner;
  FClient := aClient;
  FEndTick := aEndTick;
  FBoundTick := aEndTick - LoadMs + LoadBoundMs;
  FLast := crResponse;
  FreeOnTerminate := False;
  inherited Create(True);
end;

procedure TLoadClient.Execute;
var
  R: TTestResponse;
begin
  try
    repeat
      FClient.Send(Get('/ping'));
      FLast := FClient.ReadResponse(R);
      if FLast <> crResponse then
        Break;
      Inc(FAnswered);
      if FAnswered = LoadTarget then
        InterLockedExchange(FOwner.FLoadReached, 1);
    until ((GetTickCount64 >= FEndTick) and (InterLockedExchangeAdd(FOwner.FLoadReached, 0) <> 0))
      or (GetTickCount64 >= FBoundTick);
  except
    on E: Exception do
      FError := E.Message;
  end;
  FOwner.LoadClientDone;
end;

function TLoadClient.Outcome: string;
begin
  if FError <> '' then
    Result := Format('request %d: %s', [FAnswered + 1, FError])
  else if FLast <> crResponse then
    Result := Format('request %d %s', [FAnswered + 1, FClient.Describe(FLast)])
  else
    Result := 'answered to the end';
end;

{ TTestHTTPServerConnection: called from server threads }

procedure TTestHTTPServerConnection.GetSocketHandler(Sender: TObject; const UseSSL: Boolean;
  out AHandler: TSocketHandler);
var
  H: TRecordingSocketHandler;
begin
  H := TRecordingSocketHandler.Create;
  H.FOwner := Self;
  AHandler := H;
end;

procedure TTestHTTPServerConnection.ConnectionMade;
begin
  FLock.Enter;
  try
    Inc(FLive);
    FNoConnections.ResetEvent;
  finally
    FLock.Leave;
  end;
end;

procedure TTestHTTPServerConnection.ConnectionGone;
var
  Last: Boolean;
begin
  FLock.Enter;
  try
    Dec(FLive);
    Last := FLive = 0;
  finally
    FLock.Leave;
  end;
  // Set after the lock is left: the waiting test may free FLock as soon as
  // the event is set.
  if Last then
    FNoConnections.SetEvent;
end;

procedure TTestHTTPServerConnection.ConnectionOverlap;
begin
  InterLockedIncrement(FOverlaps);
end;

procedure TTestHTTPServerConnection.LoadClientDone;
begin
  InterLockedIncrement(FLoadDone);
  FLoadChanged.SetEvent;
end;

procedure TTestHTTPServerConnection.CountAcceptIdle(Sender: TObject);
begin
  InterLockedIncrement(FIdleTicks);
  FIdleChanged.SetEvent;
end;

procedure TTestHTTPServerConnection.HandlerAccepted(aHandler: TRecordingSocketHandler);
begin
  FLock.Enter;
  try
    FHandlers.Add(aHandler);
    Insert(aHandler.Socket.Handle, FAcceptedFds, Length(FAcceptedFds));
    Inc(FAcceptCount);
  finally
    FLock.Leave;
  end;
  FAccepted.SetEvent;
end;

procedure TTestHTTPServerConnection.HandlerGone(aHandler: TRecordingSocketHandler);
var
  I: Integer;
begin
  FLock.Enter;
  try
    I := FHandlers.IndexOf(aHandler);
    if I >= 0 then
      FHandlers[I] := nil;
    if FIdleCheckWatch = aHandler then
      FIdleCheckWatch := nil;
    if FWaitWatch = aHandler then
      FWaitWatch := nil;
  finally
    FLock.Leave;
  end;
end;

procedure TTestHTTPServerConnection.HandlerReadEnded(aHandler: TRecordingSocketHandler; aResult: Integer);
begin
  FLock.Enter;
  try
    if aHandler.FReadEnd = 0 then
      if aResult = 0 then
        aHandler.FReadEnd := 1
      else
        aHandler.FReadEnd := 2;
  finally
    FLock.Leave;
  end;
end;

{ The connections whose handlers are not yet freed, by accept order, with
  what their reads have come to. }

function TTestHTTPServerConnection.OpenConnections: string;
var
  I: Integer;
  H: TRecordingSocketHandler;
  State: string;
begin
  Result := '';
  FLock.Enter;
  try
    for I := 0 to FHandlers.Count - 1 do
    begin
      H := TRecordingSocketHandler(FHandlers[I]);
      if not Assigned(H) then
        Continue;
      case H.FReadEnd of
        0: State := 'has not read its client''s end';
        1: State := 'read its client''s end';
      else
        State := 'had a read error';
      end;
      Result := Result + BoolToStr(Result = '', '', '; ') + Format('connection %d: %d bytes received, %s',
        [I + 1, H.FReceived, State]);
    end;
  finally
    FLock.Leave;
  end;
end;

procedure TTestHTTPServerConnection.HandlerSent(aHandler: TRecordingSocketHandler; aNoDelay: Boolean);
begin
  FLock.Enter;
  try
    Insert(aNoDelay, aHandler.FNoDelayAtSend, Length(aHandler.FNoDelayAtSend));
  finally
    FLock.Leave;
  end;
end;

{ The watched connection's server waits for bytes once it has received
  FWaitWatchBytes: the first such wait is counted, with how much the heap
  in use on its thread has grown since the thread first waited. }

procedure TTestHTTPServerConnection.HandlerWaits(aHandler: TRecordingSocketHandler; aHeapGrowth: Int64);
var
  Hit: Boolean;
begin
  FLock.Enter;
  try
    Hit := (FWaitWatch = aHandler) and (aHandler.FReceived >= FWaitWatchBytes);
    if Hit then
    begin
      if FWaitsSeen = 0 then
        FWaitHeapGrowth := aHeapGrowth;
      Inc(FWaitsSeen);
    end;
  finally
    FLock.Leave;
  end;
  if Hit then
    FWaitChanged.SetEvent;
end;

{ The accept-idle check (tmThreadPool) asks every kept-alive connection
  CanRead(0) on the accepting thread, with the connection list locked. When
  it finds the request that TestPoolIdleCheckDoesNotBlockFinishingWorkers
  sent on the watched connection, the held workers are released: they
  finish while that check is under way. }

procedure TTestHTTPServerConnection.HandlerSawData(aHandler: TRecordingSocketHandler);
var
  T: TServerThread;
  Hit: Boolean;
begin
  T := FThread;
  if not Assigned(T) or (GetCurrentThreadId <> T.ThreadID) then
    Exit;
  FLock.Enter;
  try
    Hit := Assigned(FIdleCheckWatch) and (aHandler = FIdleCheckWatch);
  finally
    FLock.Leave;
  end;
  if Hit then
  begin
    FReleaseHeld.SetEvent;
    FIdleCheckSawRequest.SetEvent;
    FIdleChanged.SetEvent;
  end;
end;

procedure TTestHTTPServerConnection.CountAllowConnect(Sender: TObject; ASocket: Longint; var Allow: Boolean);
begin
  InterLockedIncrement(FAllowConnectCalls);
  Allow := True;
end;

procedure TTestHTTPServerConnection.HandleRequest(Sender: TObject;
  var ARequest: TFPHTTPConnectionRequest; var AResponse: TFPHTTPConnectionResponse);
begin
  InterLockedIncrement(FRequestsHandled);
  if FRecordRequests then
  begin
    FLock.Enter;
    try
      FSeen.PathInfo := ARequest.PathInfo;
      FSeen.URL := ARequest.URL;
      FSeen.QueryString := ARequest.QueryString;
      FSeen.QueryX := ARequest.QueryFields.Values['x'];
      FSeen.Host := ARequest.Host;
    finally
      FLock.Leave;
    end;
  end;
  AResponse.Code := 200;
  if ARequest.PathInfo = '/echo' then
    AResponse.Content := ARequest.Content
  else if ARequest.PathInfo = '/hold' then
  begin
    FLock.Enter;
    try
      Inc(FHoldEntered);
    finally
      FLock.Leave;
    end;
    FHoldChanged.SetEvent;
    // Released by the test; bounded, so that a test that fails early cannot hang a worker.
    FReleaseHeld.WaitFor(2 * WatchdogMs);
    AResponse.Content := 'held';
  end
  else if ARequest.PathInfo = '/own-headers' then
  begin
    // An application that sends the headers itself, then sets the content.
    AResponse.Content := 'early';
    AResponse.SendHeaders;
    AResponse.Content := 'later';
  end
  else if ARequest.PathInfo = '/stream' then
  begin
    AResponse.FreeContentStream := True;
    AResponse.ContentStream := TStringStream.Create('pong');
  end
  else
    AResponse.Content := 'pong';
end;

procedure TTestHTTPServerConnection.CountRequestError(Sender: TObject; E: Exception);
begin
  InterLockedIncrement(FRequestErrors);
end;

{ TTestHTTPServerConnection: helpers }

constructor TTestHTTPServerConnection.Create;
begin
  inherited Create;
  FLock := TCriticalSection.Create;
  FHandlers := TFPList.Create;
  FClients := TFPList.Create;
  FAccepted := TSimpleEvent.Create;
  FListening := TSimpleEvent.Create;
  FNoConnections := TSimpleEvent.Create;
  FHoldChanged := TSimpleEvent.Create;
  FReleaseHeld := TSimpleEvent.Create;
  FIdleCheckSawRequest := TSimpleEvent.Create;
  FIdleChanged := TSimpleEvent.Create;
  FLoadChanged := TSimpleEvent.Create;
  FWaitChanged := TSimpleEvent.Create;
end;

destructor TTestHTTPServerConnection.Destroy;
begin
  // An abandoned server's threads may still call us: keep what they use.
  if not FAbandoned then
  begin
    FreeAndNil(FWaitChanged);
    FreeAndNil(FLoadChanged);
    FreeAndNil(FIdleChanged);
    FreeAndNil(FIdleCheckSawRequest);
    FreeAndNil(FReleaseHeld);
    FreeAndNil(FHoldChanged);
    FreeAndNil(FNoConnections);
    FreeAndNil(FListening);
    FreeAndNil(FAccepted);
    FreeAndNil(FClients);
    FreeAndNil(FHandlers);
    FreeAndNil(FLock);
  end;
  inherited Destroy;
end;

procedure TTestHTTPServerConnection.SetUp;
begin
  inherited SetUp;
  FNoDelayAtAccept := False;
  FNoConnections.SetEvent;
  FServer := NewServer;
end;

function TTestHTTPServerConnection.NewServer: TTestHTTPServer;
begin
  Result := TTestHTTPServer.Create(nil);
  Result.FOwner := Self;
  Result.Address := '127.0.0.1';
  Result.Port := 0;
  Result.OnRequest := @HandleRequest;
  Result.OnGetSocketHandler := @GetSocketHandler;
end;

{ A failure of TearDown replaces the test's own in the result (RunBare's
  try..finally): StopServer names it in its own message. }

procedure TTestHTTPServerConnection.RunTest;
begin
  FTestFailure := '';
  try
    inherited RunTest;
  except
    on E: Exception do
    begin
      FTestFailure := E.Message;
      raise;
    end;
  end;
end;

procedure TTestHTTPServerConnection.TearDown;
begin
  try
    StopServer;
  finally
{$IFDEF UNIX}
    // After the server: its descriptors above the old limit are closed by now.
    if FNoFileRaised then
      FpSetRLimit(RLIMIT_NOFILE, @FSavedNoFile);
    FNoFileRaised := False;
{$ENDIF}
    inherited TearDown;
  end;
end;

function TTestHTTPServerConnection.Counted(var aCount: Integer): Integer;
begin
  FLock.Enter;
  try
    Result := aCount;
  finally
    FLock.Leave;
  end;
end;

function TTestHTTPServerConnection.WaitForCount(var aCount: Integer; aTarget: Integer;
  aEvent: TSimpleEvent; aTimeoutMs: Integer): Boolean;
var
  Deadline: QWord;
  Left: Int64;
begin
  Deadline := GetTickCount64 + QWord(aTimeoutMs);
  repeat
    // Reset before looking: a change after the look sets the event again.
    aEvent.ResetEvent;
    FLock.Enter;
    try
      Result := aCount >= aTarget;
    finally
      FLock.Leave;
    end;
    if Result then
      Exit;
    Left := Int64(Deadline) - Int64(GetTickCount64);
  until (Left <= 0) or (aEvent.WaitFor(Left) <> wrSignaled);
  FLock.Enter;
  try
    Result := aCount >= aTarget;
  finally
    FLock.Leave;
  end;
end;

function TTestHTTPServerConnection.AcceptedFd(aIndex: Integer): Integer;
begin
  FLock.Enter;
  try
    Result := FAcceptedFds[aIndex];
  finally
    FLock.Leave;
  end;
end;

{ HandlerSawData acts on the connection accepted as aIndex from now on. }

procedure TTestHTTPServerConnection.WatchIdleCheck(aIndex: Integer);
begin
  FLock.Enter;
  try
    FIdleCheckWatch := TRecordingSocketHandler(FHandlers[aIndex]);
  finally
    FLock.Leave;
  end;
end;

{ HandlerWaits counts the waits for bytes of the connection accepted as
  aIndex, once it has received aBytes. }

procedure TTestHTTPServerConnection.WatchWaits(aIndex: Integer; aBytes: Int64);
begin
  FLock.Enter;
  try
    FWaitWatch := TRecordingSocketHandler(FHandlers[aIndex]);
    FWaitWatchBytes := aBytes;
    FWaitsSeen := 0;
    FWaitHeapGrowth := 0;
  finally
    FLock.Leave;
  end;
end;

{ Per write of the connection accepted as aIndex, from its write aFrom on:
  was TCP_NODELAY on? }

function TTestHTTPServerConnection.WritesOf(aIndex, aFrom: Integer): TWriteLog;
var
  H: TRecordingSocketHandler;
begin
  Result := nil;
  FLock.Enter;
  try
    H := TRecordingSocketHandler(FHandlers[aIndex]);
    if Assigned(H) and (aFrom < Length(H.FNoDelayAtSend)) then
      Result := Copy(H.FNoDelayAtSend, aFrom, Length(H.FNoDelayAtSend) - aFrom);
  finally
    FLock.Leave;
  end;
end;

procedure TTestHTTPServerConnection.UseKeepAliveThreads(aKeepConnectionTimeout: Integer);
begin
  // What Horse uses: one thread per connection, HTTP/1.1 keep-alive.
  FServer.ThreadMode := tmThread;
  FServer.KeepConnections := True;
  FServer.KeepConnectionTimeout := aKeepConnectionTimeout;
end;

procedure TTestHTTPServerConnection.UseKeepAlivePool;
begin
  // AcceptIdleTimeout stays at its default, 0.
  FServer.ThreadMode := tmThreadPool;
  FServer.KeepConnections := True;
  FServer.KeepConnectionTimeout := 15000;
end;

procedure TTestHTTPServerConnection.StartServer;
begin
  FThread := TServerThread.Create(FServer);
  if FListening.WaitFor(WatchdogMs) <> wrSignaled then
  begin
    if FThread.FDone.WaitFor(0) = wrSignaled then
      Fail('the server did not start: ' + FThread.FError);
    Fail(Format('the server did not listen within the %d ms watchdog', [WatchdogMs]));
  end;
end;

{ The keep-alive load of the tmThreadPool tests: pool workers + LoadExtraClients
  clients, connected first, then all sending requests back to back, each on
  its own connection in a thread of its own, for LoadMs and on until one
  of them has LoadTarget answers (at most LoadBoundMs). Per client: the
  requests answered (aAnswered) and how its last one went (aOutcomes). }

procedure TTestHTTPServerConnection.RunKeepAliveLoad(out aWorkers: Integer; out aAnswered: TLoadCounts;
  out aOutcomes: string);
var
  Clients: array of TTestClient;
  Load: array of TLoadClient;
  EndTick: QWord;
  I: Integer;
  AllDone: Boolean;
begin
  aWorkers := FServer.PoolMaxThreads;
  aAnswered := nil;
  aOutcomes := '';
  Clients := nil;
  for I := 1 to aWorkers + LoadExtraClients do
    Insert(Connect, Clients, Length(Clients));
  Load := nil;
  SetLength(Load, Length(Clients));
  try
    EndTick := GetTickCount64 + LoadMs;
    for I := 0 to High(Load) do
    begin
      Load[I] := TLoadClient.Create(Self, Clients[I], EndTick);
      Load[I].Start;
    end;
    // Each client ends by LoadBoundMs, or by the watchdog of its last request.
    AllDone := WaitForCount(FLoadDone, Length(Load), FLoadChanged, LoadBoundMs + 2 * WatchdogMs);
  finally
    for I := 0 to High(Load) do
      if Assigned(Load[I]) then
      begin
        // Its last read ends by the watchdog: the wait is bounded.
        Load[I].WaitFor;
        Insert(Load[I].Answered, aAnswered, Length(aAnswered));
        aOutcomes := aOutcomes + Format('%sclient %d: %s', [BoolToStr(I = 0, '', '; '), I + 1,
          Load[I].Outcome]);
        Load[I].Free;
      end;
  end;
  AssertTrue('every load client ended within its watchdog', AllDone);
end;

function CountsText(const aCounts: TLoadCounts; out aLeast, aMost: Integer): string;
var
  N: Integer;
begin
  Result := '';
  aLeast := MaxInt;
  aMost := 0;
  for N in aCounts do
  begin
    Result := Result + BoolToStr(Result = '', '', ' ') + IntToStr(N);
    if N < aLeast then
      aLeast := N;
    if N > aMost then
      aMost := N;
  end;
end;

function TTestHTTPServerConnection.Connect: TTestClient;
begin
  Result := TTestClient.Create(FServer.BoundPort);
  FClients.Add(Result);
end;

{ A connection that makes a blocked accept() return, so that the accept loop
  sees that it was stopped. Refused once the loop has already ended. }

procedure TTestHTTPServerConnection.WakeAcceptor;
begin
  try
    TInetSocket.Create('127.0.0.1', FServer.BoundPort).Free;
  except
    on ESocketError do ;
  end;
end;

{ Close the clients, wait until the server has closed every connection,
  stop accepting, free the server. A server stuck with connections whose
  clients have gone (the defect a test found) is unwedged first. One that
  still cannot get there is left running, and the test fails: freeing it
  would wait forever. }

procedure TTestHTTPServerConnection.StopServer;
var
  I: Integer;
  Why: string;
begin
  for I := 0 to FClients.Count - 1 do
    TTestClient(FClients[I]).Free;
  FClients.Clear;
  FReleaseHeld.SetEvent;
  if not Assigned(FThread) then
  begin
    FreeAndNil(FServer);
    Exit;
  end;
  Why := '';
  if FNoConnections.WaitFor(CloseWaitMs) <> wrSignaled then
  begin
    FServer.Unwedge;
    if FNoConnections.WaitFor(WatchdogMs) <> wrSignaled then
      Why := Format('%d connections left open after every client closed (%s)', [Counted(FLive),
        OpenConnections]);
  end;
  FServer.Active := False;   // stops accepting; the accept loop leaves at its next wake-up
  WakeAcceptor;
  if (Why = '') and (FThread.FDone.WaitFor(WatchdogMs) <> wrSignaled) then
    Why := 'the accept loop did not stop';
  if Why <> '' then
  begin
    FAbandoned := True;
    FThread := nil;
    FServer := nil;
    if FTestFailure <> '' then
      Why := Why + '; the test had failed before: ' + FTestFailure;
    Fail(Format('the server did not stop within the %d ms watchdog: %s', [WatchdogMs, Why]));
  end;
  FThread.WaitFor;
  FreeAndNil(FThread);
  FreeAndNil(FServer);
end;

{ B1 }

procedure TTestHTTPServerConnection.TestAllowConnectHookIsCalled;
const
  Connections = 3;
var
  I: Integer;
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
begin
  UseKeepAliveThreads(15000);
  FServer.OnAllowConnect := @CountAllowConnect;
  StartServer;
  for I := 1 to Connections do
  begin
    C := Connect;
    C.Send(Get('/ping', 'Connection: close' + CRLF));
    O := C.ReadResponse(R);
    AssertTrue(Format('connection %d %s', [I, C.Describe(O)]), O = crResponse);
  end;
  // The hook is asked before a connection is served: each answer went through it.
  AssertEquals(Format('OnAllowConnect calls for %d accepted and answered connections ' +
    '(the server must ask the application''s hook about every connection)', [Connections]),
    Connections, FAllowConnectCalls);
end;

{ B2 }

procedure TTestHTTPServerConnection.TestPipelinedRequestsAllAnswered;
var
  C: TTestClient;
  O: TClientRead;
  N: Integer;
  Bodies: string;
begin
  // An idle connection is closed after 1 s: the end of the count.
  UseKeepAliveThreads(1000);
  StartServer;
  C := Connect;
  C.Send(Get('/ping') + Get('/ping') + Get('/ping'));
  N := C.ReadResponses(3, O, Bodies);
  AssertEquals(Format('responses to 3 pipelined GETs sent in one write before the connection %s ' +
    '(requests already read into the server''s buffer must be answered without new data on the socket)',
    [C.Describe(O)]), 3, N);
end;

{ B3 }

procedure TTestHTTPServerConnection.TestShortResponseIsNotHeldBehindHeader;
const
  Requests = 3;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I, J, Before: Integer;
  W: TWriteLog;
  Held: Boolean;
begin
  UseKeepAliveThreads(15000);
  StartServer;
  C := Connect;
  Before := 0;
  for I := 1 to Requests do
  begin
    C.Send(Get('/ping'));
    O := C.ReadResponse(R);
    AssertTrue(Format('request %d on the kept-alive connection %s', [I, C.Describe(O)]), O = crResponse);
    W := WritesOf(0, Before);
    Inc(Before, Length(W));
    AssertTrue(Format('response %d: the server''s writes went through its socket handler', [I]), Length(W) > 0);
    { A write after the first, with Nagle on, waits until the client acknowledges the
      segment before it, and the client delays that ACK. }
    Held := False;
    for J := 1 to High(W) do
      Held := Held or not W[J];
    AssertFalse(Format('response %d on a kept-alive connection: its header block and %d-byte body left ' +
      'in %d writes with TCP_NODELAY off, so Nagle holds the body until the client''s delayed ACK of ' +
      'the header (~40 ms on Linux, ~200 ms on Windows)', [I, Length(R.Body), Length(W)]), Held);
  end;
end;

{ B4 }

procedure TTestHTTPServerConnection.TestServerAnnouncesClose;
var
  C: TTestClient;
  R, Next: TTestResponse;
  O: TClientRead;
begin
  // The defaults: KeepConnections off, so the server closes after each response.
  StartServer;
  C := Connect;
  C.Send(Get('/ping'));
  O := C.ReadResponse(R);
  AssertTrue('the HTTP/1.1 request ' + C.Describe(O), O = crResponse);
  O := C.ReadResponse(Next);
  AssertTrue('after the response the connection ' + C.Describe(O) + ' (KeepConnections is off)',
    O in [crClosed, crReset]);
  AssertTrue(Format('the server closed the connection after an HTTP/1.1 response whose Connection ' +
    'header is "%s": a response the server closes after must say "Connection: close", or a ' +
    'client that pools connections reuses the dead socket', [R.Connection]),
    Pos('close', LowerCase(R.Connection)) > 0);
end;

{ B5 }

procedure TTestHTTPServerConnection.TestBodyDoesNotSwallowNextRequest;
var
  C: TTestClient;
  O: TClientRead;
  N: Integer;
  Bodies: string;
begin
  // An idle connection is closed after 1 s: the end of the count.
  UseKeepAliveThreads(1000);
  StartServer;
  C := Connect;
  C.Send('POST /echo HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + 'Content-Length: 5' + CRLF + CRLF +
    'hello' + Get('/ping'));
  N := C.ReadResponses(2, O, Bodies);
  AssertEquals(Format('responses to a POST with a 5-byte body and a GET that follows the body in the ' +
    'same write, before the connection %s (reading the body must keep the bytes after it: the next ' +
    'request)', [C.Describe(O)]), 2, N);
  AssertEquals('the bodies of the POST echo and of the GET', 'hello;pong;', Bodies);
end;

{ B6 }

procedure TTestHTTPServerConnection.TestPoolAnswersSecondKeepAliveRequest;
const
  Requests = 3;
var
  C, S: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I: Integer;
  P: TFPSimpleThreadPool;
begin
  UseKeepAlivePool;
  StartServer;
  C := Connect;
  for I := 1 to Requests do
  begin
    C.Send(Get('/ping'));
    O := C.ReadResponse(R);
    if O <> crResponse then
      // Unanswered: the connection waits in the pool's list, which nothing checks.
      Fail(Format('request %d of %d, one after the other on one kept-alive connection in tmThreadPool: ' +
        'the request %s (a kept-alive connection must be served again when its next request arrives)',
        [I, Requests, C.Describe(O)]));
  end;
  { Beside a slow request, with a worker idle: another connection's request holds one
    worker (/hold, released by this test), and the kept-alive client sends its next
    request after a pause longer than KeepConnectionIdleTimeout, as a browser does.
    It must be answered while the slow one is still held: the order of the answers,
    not a time, is the verdict (the held one is released only after it). }
  P := (FServer.Connectionhandler as TFPPooledConnectionHandler).Pool as TFPSimpleThreadPool;
  if P.MaxThreads < 2 then
    P.MaxThreads := 2;
  S := Connect;
  S.Send(Get('/hold', 'Connection: close' + CRLF));
  AssertTrue('the slow request holds a pool worker', WaitForCount(FHoldEntered, 1, FHoldChanged));
  Sleep(2 * FServer.KeepConnectionIdleTimeout);
  C.Send(Get('/ping'));
  O := C.ReadResponse(R);
  FReleaseHeld.SetEvent;
  if O <> crResponse then
    Fail(Format('request %d on a kept-alive connection in tmThreadPool, sent while another connection''s ' +
      'slow request held one of %d pool workers and another was idle: the request %s before the slow one ' +
      'was let go (a kept-alive request must be scheduled when it arrives, on any free worker)',
      [Requests + 1, P.MaxThreads, C.Describe(O)]));
  O := S.ReadResponse(R);
  AssertTrue('the slow request ' + S.Describe(O), O = crResponse);
end;

{ B9 }

procedure TTestHTTPServerConnection.TestAcceptIdleHandlerKeepsConnectionsChecked;
const
  Requests = 3;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I: Integer;
begin
  // tmPolled reads every request after a connection's first on the idle tick's check.
  FServer.ThreadMode := tmPolled;
  FServer.KeepConnections := True;
  FServer.KeepConnectionTimeout := 15000;
  StartServer;
  C := Connect;
  C.Send(Get('/ping'));
  O := C.ReadResponse(R);
  if O <> crResponse then
    Fail('the first request on a kept-alive connection in tmPolled: the request ' + C.Describe(O));
  // An application that installs its idle handler while the server runs.
  FServer.OnAcceptIdle := @CountAcceptIdle;
  for I := 1 to Requests do
  begin
    C.Send(Get('/ping'));
    O := C.ReadResponse(R);
    if O <> crResponse then
      Fail(Format('request %d of %d on a kept-alive connection in tmPolled, after OnAcceptIdle was assigned ' +
        'while the server runs: the request %s (the server must go on checking its connections on the ' +
        'idle tick, and call the application''s handler there)', [I, Requests, C.Describe(O)]));
  end;
  AssertTrue('the application''s OnAcceptIdle handler runs on the idle tick',
    WaitForCount(FIdleTicks, 1, FIdleChanged));
end;

{ B8 }

procedure TTestHTTPServerConnection.TestConnectionAboveFD1024IsRead;
{$IFDEF UNIX}
const
  Samples = 3;
  MaxConnections = 4 * SelectSetSize;
var
  L: TRLimit;
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  Above: array of TTestClient;
  AboveFds, Outcomes, LowMissed: string;
  I, Fd, LowAnswered, LowCount, AboveAnswered: Integer;
  Deadline: QWord;
begin
  // Both ends of every connection are in this process: two descriptors each.
  if FpGetRLimit(RLIMIT_NOFILE, @L) <> 0 then
    Ignore('cannot read RLIMIT_NOFILE');
  if L.rlim_cur < 4 * SelectSetSize then
  begin
    if L.rlim_max < 4 * SelectSetSize then
      Ignore(Format('needs %d descriptors, RLIMIT_NOFILE allows %d', [4 * SelectSetSize, L.rlim_max]));
    FSavedNoFile := L;
    L.rlim_cur := 4 * SelectSetSize;
    if FpSetRLimit(RLIMIT_NOFILE, @L) <> 0 then
      Ignore('cannot raise RLIMIT_NOFILE');
    FNoFileRaised := True;   // TearDown puts it back
  end;
  UseKeepAliveThreads(60000);
  FServer.KeepConnectionIdleTimeout := 60000;   // no wake-ups of the idle connections
  FServer.MaxLiveConnectionCount := 0;
  { A connection whose request is never read (its socket is not in select()'s
    set, which then only times out) is closed, unanswered, after
    RequestReadTimeout: within the watchdog, so that its client sees the close
    and the server can be stopped. A request that is there is read at once. }
  FServer.RequestReadTimeout := WatchdogMs div 2;
  StartServer;
  Above := nil;
  AboveFds := '';
  LowMissed := '';
  LowAnswered := 0;
  LowCount := 0;
  // One connection at a time, each accepted before the next: the i-th accept is the i-th client.
  for I := 0 to MaxConnections - 1 do
  begin
    C := Connect;
    C.Send(Get('/ping'));
    AssertTrue(Format('connection %d accepted', [I + 1]), WaitForCount(FAcceptCount, I + 1, FAccepted));
    Fd := AcceptedFd(I);
    if Fd < SelectSetSize then
    begin
      // The control, same run: connections on descriptors below 1024.
      Inc(LowCount);
      O := C.ReadResponse(R);
      if O = crResponse then
        Inc(LowAnswered)
      else
        LowMissed := LowMissed + Format(' %d (%s)', [Fd, C.Describe(O)]);
    end
    else
    begin
      Insert(C, Above, Length(Above));
      AboveFds := AboveFds + ' ' + IntToStr(Fd);
      if Length(Above) = Samples then
        Break;
    end;
  end;
  AssertEquals('connections with a server descriptor of 1024 or above', Samples, Length(Above));
  AssertEquals(Format('answered connections with a server descriptor below %d (not answered:%s)',
    [SelectSetSize, LowMissed]), LowCount, LowAnswered);
  AboveAnswered := 0;
  Outcomes := '';
  // One watchdog for all: their requests are all sent by now.
  Deadline := GetTickCount64 + WatchdogMs;
  for C in Above do
  begin
    O := C.ReadResponseBy(Deadline, R);
    if O = crResponse then
      Inc(AboveAnswered);
    Outcomes := Outcomes + ' ' + C.Describe(O) + ';';
  end;
  AssertEquals(Format('answered connections with a server descriptor of %d or above (descriptors%s; ' +
    'each connection%s) while all %d below %d were answered: a socket above 1023 must be read, ' +
    'which select() and its descriptor bitmap cannot do', [SelectSetSize, AboveFds, Outcomes,
    LowCount, SelectSetSize]), Samples, AboveAnswered);
end;
{$ELSE}
begin
  Ignore('no descriptor limit to test on this platform: Winsock''s select() takes a list of ' +
    'sockets, not a bitmap indexed by descriptor number');
end;
{$ENDIF}

{ B7 }

procedure TTestHTTPServerConnection.TestPoolIdleCheckDoesNotBlockFinishingWorkers;
var
  D, C: TTestClient;
  Held: array of TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I, Workers, Ticks: Integer;
  Seen, Looked: Boolean;
  Deadline: QWord;
  Left: Int64;
begin
  { The hang 16 concurrent keep-alive clients bring about by chance, made to happen
    every time: every worker is finishing a connection that closes while the
    accept-idle check schedules another connection's request. }
  UseKeepAlivePool;
  FServer.AcceptIdleTimeout := 100;
  FServer.OnAcceptIdle := @CountAcceptIdle;
  StartServer;
  Workers := FServer.PoolMaxThreads;
  // D: served once, then kept alive, waiting in the connection list.
  D := Connect;
  D.Send(Get('/ping'));
  O := D.ReadResponse(R);
  AssertTrue('request 1 on the kept-alive connection ' + D.Describe(O), O = crResponse);
  // Every worker busy with a request after which its connection closes.
  Held := nil;
  for I := 1 to Workers do
  begin
    C := Connect;
    C.Send(Get('/hold', 'Connection: close' + CRLF));
    Insert(C, Held, Length(Held));
  end;
  AssertTrue(Format('%d of %d pool workers busy with held requests', [FHoldEntered, Workers]),
    WaitForCount(FHoldEntered, Workers, FHoldChanged));
  { The check that finds request 2 on D releases the held workers (HandlerSawData).
    A check that does not look at the connections while every worker is busy
    cannot wait for one: a tick that began after the request was sent has
    ended once the next one begins. }
  WatchIdleCheck(0);
  D.Send(Get('/ping'));
  Ticks := Counted(FIdleTicks);
  Deadline := GetTickCount64 + WatchdogMs;
  repeat
    FIdleChanged.ResetEvent;
    Seen := FIdleCheckSawRequest.WaitFor(0) = wrSignaled;
    Looked := Seen or (Counted(FIdleTicks) >= Ticks + 2);
    Left := Int64(Deadline) - Int64(GetTickCount64);
  until Looked or (Left <= 0) or (FIdleChanged.WaitFor(Left) <> wrSignaled);
  FReleaseHeld.SetEvent;
  AssertTrue('an accept-idle check ran after request 2 was sent on the kept-alive connection', Looked);
  for C in Held do
  begin
    O := C.ReadResponse(R);
    AssertTrue('a held request ' + C.Describe(O), O = crResponse);
  end;
  O := D.ReadResponse(R);
  if O <> crResponse then
    Fail(Format('request 2 on a kept-alive connection, %s while all %d pool workers were finishing ' +
      'connections that close: the request %s (deadlock: the check holds the connection list while ' +
      'it waits for a free worker, and each finishing worker waits for that list to remove its ' +
      'connection)', [BoolToStr(Seen, 'found by the accept-idle check', 'sent'), Workers, D.Describe(O)]));
end;

{ B10 }

procedure TTestHTTPServerConnection.TestExpectContinueIsAnsweredBeforeTheBody;
const
  // How long the client holds the body back for the interim response, as a
  // client that asked does (curl: 1 s): a bound on the wait, which the
  // answer ends; the verdict is whether it came.
  HoldBodyMs = 2000;
  Body = 'hello';
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  Interim, Code: Integer;
begin
  UseKeepAliveThreads(WatchdogMs);
  StartServer;
  C := Connect;
  C.Send('POST /echo HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + 'Content-Length: ' +
    IntToStr(Length(Body)) + CRLF + 'Expect: 100-continue' + CRLF + CRLF);
  Interim := 0;
  O := C.ReadResponseBy(GetTickCount64 + HoldBodyMs, R);
  if O = crResponse then
  begin
    if R.Code <> 100 then
      Fail(Format('the server answered %d before the body was sent', [R.Code]));
    Inc(Interim);
  end
  else if O <> crWatchdog then
    Fail('while the client held the body back for the 100, the connection ' + C.Describe(O));
  C.Send(Body);
  O := C.ReadResponse(R);
  AssertTrue('the POST, once its body was sent, ' + C.Describe(O), O = crResponse);
  Code := R.Code;
  AssertTrue(Format('a second interim 100 after the body was sent (%d before it)', [Interim]), Code <> 100);
  AssertEquals(Format('interim 100 Continue responses before the body was sent, to an HTTP/1.1 POST ' +
    'with "Expect: %s" whose body the client held back for %d ms (the server must answer the ' +
    'expectation before it reads the body)', ['100-continue', HoldBodyMs]), 1, Interim);
  AssertEquals('the status of the POST', 200, Code);
  AssertEquals('the POST''s echo of its body', Body, Trim(R.Body));
end;

{ B11 }

procedure TTestHTTPServerConnection.TestAmbiguousFramingIsRejected;
const
  // A GET hidden where the server's own reading of each request puts the
  // next one: a proxy in front that frames the request otherwise forwards it
  // as part of the POST.
  Hidden = 'GET /ping HTTP/1.1' + #13#10 + 'Host: 127.0.0.1' + #13#10 + #13#10;
  Chunked = '27' + #13#10 + Hidden + #13#10 + '0' + #13#10 + #13#10;
  Probes: array[0..4] of record
    Name, Fields, Body: string;
    Code: Integer;
  end = (
    (Name: 'Transfer-Encoding: chunked'; Fields: 'Transfer-Encoding: chunked' + #13#10;
     Body: Chunked; Code: 501),
    (Name: 'Transfer-Encoding: chunked with Content-Length: 4';
     Fields: 'Transfer-Encoding: chunked' + #13#10 + 'Content-Length: 4' + #13#10;
     Body: Chunked; Code: 400),
    (Name: 'Content-Length: 39, then Content-Length: 0';
     Fields: 'Content-Length: 39' + #13#10 + 'Content-Length: 0' + #13#10; Body: Hidden; Code: 400),
    (Name: 'Content-Length : 39 (whitespace before the colon)';
     Fields: 'Content-Length : 39' + #13#10; Body: Hidden; Code: 400),
    (Name: 'Content-Length: 39 folded onto the line before (obs-fold)';
     Fields: 'X-A: a' + #13#10 + ' Content-Length: 39' + #13#10; Body: Hidden; Code: 400));
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I: Integer;
begin
  UseKeepAliveThreads(WatchdogMs);
  StartServer;
  for I := Low(Probes) to High(Probes) do
  begin
    C := Connect;
    C.Send('POST /echo HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + Probes[I].Fields + CRLF +
      Probes[I].Body);
    O := C.ReadResponse(R);
    AssertTrue(Format('the POST with %s: %s', [Probes[I].Name, C.Describe(O)]), O = crResponse);
    AssertEquals(Format('the status of an ambiguous request, a POST with %s (RFC 9112 6.3: the ' +
      'server must reject it, not dispatch it)', [Probes[I].Name]), Probes[I].Code, R.Code);
    AssertEquals(Format('the Connection header of the %d to the POST with %s', [R.Code, Probes[I].Name]),
      'close', LowerCase(R.Connection));
    O := C.ReadResponse(R);
    AssertTrue(Format('after the %d to the POST with %s the connection must close, and it %s',
      [Probes[I].Code, Probes[I].Name, C.Describe(O)]), O in [crClosed, crReset]);
  end;
  // Valid framing is served as before.
  C := Connect;
  C.Send('POST /echo HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + 'Content-Length: 5' + CRLF + CRLF +
    'hello');
  O := C.ReadResponse(R);
  AssertTrue('the POST with one Content-Length, ' + C.Describe(O), O = crResponse);
  AssertEquals('the status of the POST with one Content-Length', 200, R.Code);
  AssertEquals('the echo of the POST with one Content-Length', 'hello', Trim(R.Body));
end;

{ B12 }

procedure TTestHTTPServerConnection.TestBodyIsReadAsItArrives;
const
  Sent = '0123456789';
  // A body cut short: its client ends its stream after Sent.
  ShortLength = 100;
  // A body that does not come: far above what the server holds for the
  // bytes it has, far below the default MaxBodySize.
  LargeLength = 64 * 1024 * 1024;
  // The heap may grow by what the server keeps for a request; this share of
  // the announced length is far above that.
  LargeShare = 16;

  function Post(const aPath: string; aLength: Int64): string;
  begin
    Result := 'POST ' + aPath + ' HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF +
      Format('Content-Length: %d', [aLength]) + CRLF + CRLF + Sent;
  end;

var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  Failures, Request: string;
  I, Zeros, Handled, Accepted: Integer;
  Growth: Int64;
begin
  UseKeepAliveThreads(WatchdogMs);
  StartServer;
  Failures := '';
  // 1. 10 bytes of the 100 the POST announces, then the end of the stream:
  // the message is incomplete (RFC 9112 8), not to be dispatched.
  C := Connect;
  C.Send(Post('/echo', ShortLength));
  C.ShutdownWrite;
  O := C.ReadResponse(R);
  Handled := Counted(FRequestsHandled);
  // Where a rejected request is answered (B16), its 400 comes before the close.
  if (O = crResponse) and (Handled = 0) and (R.Code = 400) and SameText(R.Connection, 'close') then
    O := C.ReadResponse(R);
  if not (O in [crClosed, crReset]) or (Handled <> 0) then
  begin
    Zeros := 0;
    for I := 1 to Length(R.Body) do
      if R.Body[I] = #0 then
        Inc(Zeros);
    if O = crResponse then
      Failures := Format('an incomplete request body (%d of the %d bytes of its Content-Length, then ' +
        'the end of the client''s stream) was dispatched %d time(s) and answered %d, the body it echoed ' +
        'holding %d zero bytes where the %d that never came belong; RFC 9112 8: an incomplete message ' +
        'must not be processed, and the connection must be closed', [Length(Sent), ShortLength, Handled,
        R.Code, Zeros, ShortLength - Length(Sent)])
    else
      Failures := Format('an incomplete request body (%d of the %d bytes of its Content-Length, then ' +
        'the end of the client''s stream) was dispatched %d time(s), and the connection %s',
        [Length(Sent), ShortLength, Handled, C.Describe(O)]);
  end;
  // 2. 10 bytes of the 64 MiB the POST announces, and nothing more while
  // the server waits for the rest: what it has allocated for the body by
  // then must follow the bytes that came, not the length announced.
  Accepted := Counted(FAcceptCount);
  C := Connect;
  if not WaitForCount(FAcceptCount, Accepted + 1, FAccepted) then
    Fail(Format('the second connection was not accepted within the %d ms watchdog', [WatchdogMs]));
  // /ping: a server that dispatches it once the client has gone does not echo 64 MiB.
  Request := Post('/ping', LargeLength);
  WatchWaits(Accepted, Length(Request));
  C.Send(Request);
  if not WaitForCount(FWaitsSeen, 1, FWaitChanged) then
    Failures := Failures + BoolToStr(Failures = '', '', '; ') + Format('the server did not wait for ' +
      'the rest of a request body within the %d ms watchdog', [WatchdogMs])
  else
  begin
    FLock.Enter;
    try
      Growth := FWaitHeapGrowth;
    finally
      FLock.Leave;
    end;
    if Growth * LargeShare >= LargeLength then
      Failures := Failures + BoolToStr(Failures = '', '', '; ') + Format('while the server waited for ' +
        'the rest of a request body of which %d of the %d bytes of its Content-Length had come, the ' +
        'heap in use on its thread had grown by %d bytes, %.2f of the announced length (at most 1/%d: ' +
        'what is allocated for a body must follow what arrives)', [Length(Sent), LargeLength, Growth,
        Growth / LargeLength, LargeShare]);
  end;
  if Failures <> '' then
    Fail(Failures);
end;

{ B13 }

procedure TTestHTTPServerConnection.TestConnectionOptionsDecideKeepAlive;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  Failures, What: string;
begin
  // A kept connection waits the watchdog for its next request: only the
  // request can end it before.
  UseKeepAliveThreads(WatchdogMs);
  StartServer;
  Failures := '';
  // 1. Connection is a list of options (RFC 9110 7.6.1); with "close" among
  // them the server closes the connection after the response (RFC 9112 9.6).
  C := Connect;
  C.Send(Get('/ping', 'Connection: keep-alive, close' + CRLF));
  O := C.ReadResponse(R);
  AssertTrue('the GET with Connection: keep-alive, close ' + C.Describe(O), O = crResponse);
  // A second request, after the response: a closed connection does not answer it.
  C.Send(Get('/ping'));
  O := C.ReadResponse(R);
  if O = crResponse then
    What := 'was answered'
  else
    What := C.Describe(O);
  if not (O in [crClosed, crReset]) then
    Failures := Format('after the response to a GET with "Connection: keep-alive, close" the connection ' +
      'stayed open: a second GET on it %s (RFC 9110 7.6.1: Connection is a list of options; RFC 9112 ' +
      '9.6: with a close option the server must close the connection after the response)', [What]);
  // 2. An HTTP/1.2 request persists as HTTP/1.1 does (RFC 9112 9.3): a
  // second request on its connection is answered.
  C := Connect;
  C.Send('GET /ping HTTP/1.2' + CRLF + 'Host: 127.0.0.1' + CRLF + CRLF);
  O := C.ReadResponse(R);
  AssertTrue('the HTTP/1.2 GET ' + C.Describe(O), O = crResponse);
  C.Send('GET /ping HTTP/1.2' + CRLF + 'Host: 127.0.0.1' + CRLF + CRLF);
  O := C.ReadResponse(R);
  if O <> crResponse then
    Failures := Failures + BoolToStr(Failures = '', '', '; ') + Format('a second GET on the ' +
      'connection of an HTTP/1.2 GET (no Connection field) %s, where it must be answered (RFC 9112 ' +
      '9.3: HTTP/1.1 or a later 1.x version persists unless told otherwise)', [C.Describe(O)]);
  if Failures <> '' then
    Fail(Failures);
end;

{ B14 }

procedure TTestHTTPServerConnection.TestHeadResponseHasNoContent;
const
  // A route that sets Content, and one that sets a ContentStream the
  // response frees (FreeContentStream).
  Paths: array[0..1] of string = ('/ping', '/stream');
var
  C: TTestClient;
  H, R: TTestResponse;
  O: TClientRead;
  Failures, Failure: string;
  I: Integer;
begin
  // A kept connection waits the watchdog for its next request: only the
  // request can end it before.
  UseKeepAliveThreads(WatchdogMs);
  StartServer;
  Failures := '';
  for I := Low(Paths) to High(Paths) do
  begin
    // A HEAD, then a GET of the same route on the same connection. The
    // client reads the head of the response to HEAD and no content (RFC 9112
    // 6.3), so the GET's status line must be the next byte it reads.
    C := Connect;
    C.Send('HEAD ' + Paths[I] + ' HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + CRLF);
    O := C.ReadHead(H);
    AssertTrue(Format('the HEAD %s %s', [Paths[I], C.Describe(O)]), O = crResponse);
    AssertEquals(Format('the status of the HEAD %s', [Paths[I]]), 200, H.Code);
    C.Send(Get(Paths[I]));
    O := C.ReadResponse(R);
    AssertTrue(Format('the GET %s after the HEAD on its connection %s', [Paths[I], C.Describe(O)]),
      O = crResponse);
    Failure := '';
    if R.Lead <> 0 then
      Failure := Format('the response to HEAD %s (Content-Length: %d) carried %d bytes of content after ' +
        'its head (RFC 9110 9.3.2: the server must not send content in a response to HEAD): the ' +
        'client, which reads none, took them for the start of the next response on the connection, ' +
        'the GET %s''s, and read its status as %d', [Paths[I], H.ContentLength, R.Lead, Paths[I], R.Code])
    else if (R.Code <> 200) or (R.ContentLength = 0) then
      Failure := Format('the GET %s after the HEAD was answered %d with a Content-Length of %d, ' +
        'where the route answers 200 with content', [Paths[I], R.Code, R.ContentLength])
    else if H.ContentLength <> R.ContentLength then
      Failure := Format('the response to HEAD %s has a Content-Length of %d, that to the GET %d (RFC ' +
        '9110 9.3.2: the same header fields as a GET would get)', [Paths[I], H.ContentLength, R.ContentLength]);
    if Failure <> '' then
      Failures := Failures + BoolToStr(Failures = '', '', '; ') + Failure;
  end;
  if Failures <> '' then
    Fail(Failures);
end;

{ B15 }

procedure TTestHTTPServerConnection.TestFreeReturnsWhileClientsStayConnected;
type
  TFreeCase = record
    Name: string;
    Mode: TThreadMode;
    IdleTimeout: Integer;            // KeepConnectionIdleTimeout
    Server: TTestHTTPServer;
    Client: TTestClient;
    Freeing: TServerFreeThread;
    Returned: Boolean;
  end;
var
  Cases: array[0..3] of TFreeCase;
  R: TTestResponse;
  O: TClientRead;
  I, Open, Returned, Closed, Left: Integer;
  Deadline: QWord;
  Wait: Int64;
  Hung, NotClosed: string;
begin
  // A kept-alive connection between two requests, in each mode: in the pool
  // once with no task (a task gives a connection back at once with
  // KeepConnectionIdleTimeout 0) and once with its task waiting for the next
  // request; in tmThread with its thread waiting for it.
  Cases[0].Name := 'tmThreadPool (the connection with no task)';
  Cases[0].Mode := tmThreadPool;
  Cases[0].IdleTimeout := 0;
  Cases[1].Name := 'tmThreadPool (a task waiting for the next request)';
  Cases[1].Mode := tmThreadPool;
  Cases[1].IdleTimeout := FarTimeoutMs;
  Cases[2].Name := 'tmPolled';
  Cases[2].Mode := tmPolled;
  Cases[2].IdleTimeout := FarTimeoutMs;
  Cases[3].Name := 'tmThread';
  Cases[3].Mode := tmThread;
  Cases[3].IdleTimeout := FarTimeoutMs;
  // Until every server is freed: a server whose Free does not return is left
  // running, and its threads may still call this test case.
  FAbandoned := True;
  // Each case has a server of its own; the one SetUp made is not used.
  FreeAndNil(FServer);
  for I := Low(Cases) to High(Cases) do
  begin
    FServer := NewServer;
    FServer.ThreadMode := Cases[I].Mode;
    FServer.KeepConnections := True;
    FServer.KeepConnectionTimeout := FarTimeoutMs;
    FServer.KeepConnectionIdleTimeout := Cases[I].IdleTimeout;
    FServer.RequestReadTimeout := FarTimeoutMs;
    FListening.ResetEvent;
    StartServer;
    Cases[I].Client := Connect;
    Cases[I].Client.Send(Get('/ping'));
    O := Cases[I].Client.ReadResponse(R);
    AssertTrue(Format('%s: the GET %s', [Cases[I].Name, Cases[I].Client.Describe(O)]), O = crResponse);
    AssertFalse(Format('%s: the GET''s response says Connection: close', [Cases[I].Name]),
      SameText(R.Connection, 'close'));
    // The accept loop stops, as it has when an application frees its server
    // after Active:=True returned.
    FServer.Active := False;
    WakeAcceptor;
    AssertTrue(Format('%s: the accept loop stopped within the %d ms watchdog', [Cases[I].Name, WatchdogMs]),
      FThread.FDone.WaitFor(WatchdogMs) = wrSignaled);
    FThread.WaitFor;
    FreeAndNil(FThread);
    Cases[I].Server := FServer;
    FServer := nil;
  end;
  // Free every server at once, each in a thread of its own, with every client
  // still connected; the watchdog is the verdict's only bound. Meanwhile
  // this thread runs what the servers' threads Synchronize, as Free would on
  // the main thread (TThread.WaitFor does).
  Open := Counted(FLive);
  for I := Low(Cases) to High(Cases) do
    Cases[I].Freeing := TServerFreeThread.Create(Cases[I].Server);
  Deadline := GetTickCount64 + FreeWatchdogMs;
  repeat
    Returned := 0;
    for I := Low(Cases) to High(Cases) do
      if Cases[I].Freeing.FDone.WaitFor(0) = wrSignaled then
        Inc(Returned);
    Wait := Int64(Deadline) - Int64(GetTickCount64);
    if (Returned = Length(Cases)) or (Wait <= 0) then
      Break;
    CheckSynchronize(Wait);
  until False;
  Returned := 0;
  Hung := '';
  for I := Low(Cases) to High(Cases) do
  begin
    Cases[I].Returned := Cases[I].Freeing.FDone.WaitFor(0) = wrSignaled;
    if Cases[I].Returned then
      Inc(Returned)
    else
      Hung := Hung + BoolToStr(Hung = '', '', ', ') + Cases[I].Name;
  end;
  // A server whose Free returned has closed its client's connection.
  Closed := 0;
  NotClosed := '';
  for I := Low(Cases) to High(Cases) do
    if Cases[I].Returned then
    begin
      Cases[I].Freeing.WaitFor;
      AssertEquals(Format('%s: an exception in Free', [Cases[I].Name]), '', Cases[I].Freeing.FError);
      FreeAndNil(Cases[I].Freeing);
      O := Cases[I].Client.ReadResponse(R);
      if O in [crClosed, crReset] then
        Inc(Closed)
      else
        NotClosed := NotClosed + BoolToStr(NotClosed = '', '', '; ') + Cases[I].Name + ' ' +
          Cases[I].Client.Describe(O);
    end;
  if Returned < Length(Cases) then
    Fail(Format('TFPHttpServer.Free did not return within the %d ms watchdog, with a kept-alive client ' +
      'connected to each server (every time-out %d ms), in %d of %d cases: %s; %d connections were open ' +
      'when Free was called (Free must close and free the connections of clients that stay connected: ' +
      'nothing else will)', [FreeWatchdogMs, FarTimeoutMs, Length(Cases) - Returned, Length(Cases), Hung,
      Open]));
  AssertEquals(Format('clients whose connection the server closed when it was freed (not closed: %s)',
    [NotClosed]), Length(Cases), Closed);
  // Every connection object is freed (the last one on its own thread, maybe
  // just after Free returned).
  FNoConnections.WaitFor(WatchdogMs);
  Left := Counted(FLive);
  AssertEquals(Format('connection objects left after Free returned (of %d open when it was called)',
    [Open]), 0, Left);
  FAbandoned := False;
end;

{ B16 }

procedure TTestHTTPServerConnection.TestRequestErrorsAreAnswered;
const
  Probes: array[0..4] of record
    Name, Request: string;
    Code: Integer;
    Rfc: string;
  end = (
    (Name: 'an invalid request line (GET /ping FTP/1.0)';
     Request: 'GET /ping FTP/1.0' + #13#10 + 'Host: 127.0.0.1' + #13#10 + #13#10;
     Code: 400; Rfc: 'RFC 9112 3'),
    (Name: 'a control byte in a header line';
     Request: 'GET /ping HTTP/1.1' + #13#10 + 'X-A: a' + #1 + 'b' + #13#10 + #13#10;
     Code: 400; Rfc: 'RFC 9112 5'),
    (Name: 'a header line above MaxLineLength (64)';
     Request: 'GET /ping HTTP/1.1' + #13#10 + 'X-A: ' +
       '0123456789012345678901234567890123456789012345678901234567890123456789' + #13#10 + #13#10;
     Code: 431; Rfc: 'RFC 6585 5'),
    (Name: 'a body above MaxBodySize (10)';
     Request: 'POST /echo HTTP/1.1' + #13#10 + 'Host: 127.0.0.1' + #13#10 + 'Content-Length: 11' + #13#10 +
       #13#10 + '0123456789a';
     Code: 413; Rfc: 'RFC 9110 15.5.14'),
    (Name: 'a head that stops coming (RequestReadTimeout 200 ms)';
     Request: 'GET /ping HTTP/1.1' + #13#10 + 'Host: 127.0.0.1' + #13#10;
     Code: 408; Rfc: 'RFC 9110 15.5.9'));
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I: Integer;
begin
  UseKeepAliveThreads(WatchdogMs);
  FServer.MaxLineLength := 64;
  FServer.MaxBodySize := 10;
  FServer.RequestReadTimeout := 200;
  FServer.OnRequestError := @CountRequestError;
  StartServer;
  for I := Low(Probes) to High(Probes) do
  begin
    C := Connect;
    C.Send(Probes[I].Request);
    O := C.ReadResponse(R);
    AssertTrue(Format('the request with %s %s, where the server should answer it %d (%s): the ' +
      'server rejected it and closed the connection with no status', [Probes[I].Name, C.Describe(O),
      Probes[I].Code, Probes[I].Rfc]), O = crResponse);
    AssertEquals(Format('the status of the answer to the request with %s', [Probes[I].Name]),
      Probes[I].Code, R.Code);
    AssertEquals(Format('the Connection header of the %d to the request with %s', [R.Code, Probes[I].Name]),
      'close', LowerCase(R.Connection));
    AssertEquals(Format('the content of the %d', [R.Code]), Format('Error %d', [R.Code]), Trim(R.Body));
    O := C.ReadResponse(R);
    AssertTrue(Format('after the %d to the request with %s the connection must close, and it %s',
      [Probes[I].Code, Probes[I].Name, C.Describe(O)]), O in [crClosed, crReset]);
  end;
  // The application still hears of every error, once.
  AssertEquals('OnRequestError calls for the rejected requests', Length(Probes), Counted(FRequestErrors));
  // A client that closes without a request is not answered.
  C := Connect;
  C.ShutdownWrite;
  O := C.ReadResponse(R);
  AssertTrue('a connection closed by its client before any request ' + C.Describe(O) +
    ', where the server closes it without a response', O in [crClosed, crReset]);
  AssertEquals('requests dispatched', 0, Counted(FRequestsHandled));
end;

procedure TTestHTTPServerConnection.TestRequestHeadHasADeadline;
const
  ReadTimeoutMs = 1000;   // RequestReadTimeout
  GapMs = 100;            // between two pieces: a tenth of it
  Piece = 3;              // bytes a piece
  // 66 bytes: 22 pieces, 2.2 s, more than twice RequestReadTimeout.
  Head = 'GET /ping HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + 'X-Drip: ddddddddddddddddd' + CRLF + CRLF;
  Body = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
var
  Drip, Slow, Kept: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  Sent, BodySent, N, Attempt: Integer;
  Ended, SlowCut: Boolean;
  Start, Last, Gap, KeptSince: QWord;
begin
  UseKeepAliveThreads(WatchdogMs);
  FServer.RequestReadTimeout := ReadTimeoutMs;
  StartServer;
  // The drip: the head, Piece bytes every GapMs, each gap a tenth of the
  // time-out; between two pieces the client waits for the server's answer
  // or close. Beside it, a body dripped the same way after a whole head, and
  // a kept-alive connection idle all the while (longer than RequestReadTimeout,
  // shorter than KeepConnectionTimeout). A drip in which the test itself
  // stalled half the time-out between two pieces (a loaded machine) measured
  // nothing: it is made again, twice at most, on new connections (a new
  // kept-alive one too, so that its idle time is one drip's, never the sum
  // of several beyond KeepConnectionTimeout).
  Attempt := 0;
  repeat
    Inc(Attempt);
    Kept := Connect;
    Kept.Send(Get('/ping'));
    O := Kept.ReadResponse(R);
    AssertTrue('the first GET on the kept-alive connection ' + Kept.Describe(O), O = crResponse);
    KeptSince := GetTickCount64;
    Drip := Connect;
    Slow := Connect;
    Slow.Send('POST /echo HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + 'Content-Length: ' +
      IntToStr(Length(Body)) + CRLF + CRLF);
    Sent := 0;
    BodySent := 0;
    Ended := False;
    SlowCut := False;
    O := crWatchdog;
    Start := GetTickCount64;
    Last := Start;
    Gap := 0;
    while (not Ended and (Sent < Length(Head))) or (not SlowCut and (BodySent < Length(Body))) do
    begin
      if GetTickCount64 - Last > Gap then
        Gap := GetTickCount64 - Last;
      Last := GetTickCount64;
      if not Ended and (Sent < Length(Head)) then
      begin
        N := Length(Head) - Sent;
        if N > Piece then
          N := Piece;
        try
          Drip.Send(Copy(Head, Sent + 1, N));
          Inc(Sent, N);
        except
          Ended := True;   // the server reset the connection
        end;
      end;
      if not SlowCut and (BodySent < Length(Body)) then
      begin
        N := Length(Body) - BodySent;
        if N > Piece then
          N := Piece;
        try
          Slow.Send(Copy(Body, BodySent + 1, N));
          Inc(BodySent, N);
        except
          // Cut by the server: a stall of the test (the per-read time-out
          // passed) is made again below; else the assertion after the loop.
          SlowCut := True;
        end;
      end;
      if not Ended then
      begin
        O := Drip.ReadResponseBy(GetTickCount64 + GapMs, R);
        Ended := O <> crWatchdog;
      end
      else
        Sleep(GapMs);   // the pace of the body
    end;
  until (Gap < ReadTimeoutMs div 2) or (Attempt = 3);
  AssertTrue(Format('the test itself stalled %d ms between two pieces in each of %d drips ' +
    '(RequestReadTimeout %d ms): the drip measured nothing', [Gap, Attempt, ReadTimeoutMs]),
    Gap < ReadTimeoutMs div 2);
  if not Ended then
    O := Drip.ReadResponse(R);
  AssertTrue(Format('a request head sent %d bytes every %d ms (RequestReadTimeout %d ms) was read whole: ' +
    '%d of %d bytes were sent in %d ms and the request %s, where the head must be complete within %d ms ' +
    'of its first byte (a client dripping its head holds the connection as long as it likes)',
    [Piece, GapMs, ReadTimeoutMs, Sent, Length(Head), GetTickCount64 - Start, Drip.Describe(O),
    ReadTimeoutMs]), Sent < Length(Head));
  AssertTrue(Format('the dripped head, cut after %d of %d bytes, %s (code %d), where the server answers ' +
    '408 or closes', [Sent, Length(Head), Drip.Describe(O), R.Code]),
    (O in [crClosed, crReset]) or ((O = crResponse) and (R.Code = 408)));
  // The content keeps the per-read rule: a slow but steady body is read whole.
  AssertFalse(Format('a POST whose %d-byte body came %d bytes every %d ms was cut by the server after %d bytes, ' +
    'where it is read whole', [Length(Body), Piece, GapMs, BodySent]), SlowCut);
  O := Slow.ReadResponse(R);
  AssertTrue(Format('a POST whose %d-byte body came %d bytes every %d ms %s, where it is answered',
    [Length(Body), Piece, GapMs, Slow.Describe(O)]), O = crResponse);
  AssertEquals('the status of the POST with the slow body', 200, R.Code);
  AssertEquals('the echoed slow body', Body, Trim(R.Body));
  // The kept-alive connection, idle all this time (more than twice
  // RequestReadTimeout), is still served: its next head came whole.
  Gap := GetTickCount64 - KeptSince;
  AssertTrue(Format('the kept-alive connection was idle %d ms, where the check needs more than twice ' +
    'RequestReadTimeout (%d ms) and less than KeepConnectionTimeout (%d ms)', [Gap, ReadTimeoutMs, WatchdogMs]),
    (Gap > 2 * ReadTimeoutMs) and (Gap < WatchdogMs));
  Kept.Send(Get('/ping'));
  O := Kept.ReadResponse(R);
  AssertTrue(Format('a GET on a kept-alive connection idle %d ms (RequestReadTimeout %d ms) %s, where it is ' +
    'answered', [Gap, ReadTimeoutMs, Kept.Describe(O)]), O = crResponse);
  AssertEquals('the status of the GET after the idle time', 200, R.Code);
end;

procedure TTestHTTPServerConnection.TestConnectionLimitAnswerSaysItsLength;
const
  Get = 'GET /ping HTTP/1.1' + #13#10 + 'Host: 127.0.0.1' + #13#10 + #13#10;
  Text503 = 'Server is temporarily overloaded. Please try again shortly.';
var
  Held, C: TTestClient;
  R, Last: TTestResponse;
  O, Ended: TClientRead;
  Rest: RawByteString;
begin
  UseKeepAliveThreads(WatchdogMs);
  FServer.MaxLiveConnectionCount := 1;
  StartServer;
  // A kept-alive connection takes the one slot.
  Held := Connect;
  Held.Send(Get);
  O := Held.ReadResponse(R);
  AssertTrue('the first connection, below MaxLiveConnectionCount 1, ' + Held.Describe(O) +
    ', where it is served', (O = crResponse) and (R.Code = 200));
  // The next one is refused with the 503; its request is never read.
  C := Connect;
  C.Send(Get);
  C.FHeadOnly := True;   // the head alone: what follows it is read below
  try
    O := C.ReadResponse(R);
  finally
    C.FHeadOnly := False;
  end;
  AssertTrue('a connection beyond MaxLiveConnectionCount 1 ' + C.Describe(O) +
    ', where it gets the 503', (O = crResponse) and (R.Code = 503));
  // Everything after the head, up to the end of the connection.
  Ended := C.ReadResponse(Last);
  Rest := C.FBuffer;
  AssertTrue('after the 503 the connection ' + C.Describe(Ended) + ', where the server closes it',
    Ended in [crClosed, crReset]);
  AssertEquals('the text of the 503', Text503, Rest);
  AssertTrue(Format('the 503 sent at MaxLiveConnectionCount 1 has no Content-Length: its %d-byte text ' +
    'ends only where the connection ends (here it %s, the request left unread), so a client cannot ' +
    'tell the whole 503 from one cut short (RFC 9112 6.3), and one that meets the reset first ' +
    'fails (curl: exit 56)', [Length(Rest), C.Describe(Ended)]), R.ContentLength > 0);
  AssertEquals('the Content-Length of the 503 against the length of its text', Length(Text503),
    R.ContentLength);
  AssertEquals('the Connection header of the 503', 'close', LowerCase(R.Connection));
  // Send503OnMaxConnections False: closed with no byte, as before.
  FServer.Send503OnMaxConnections := False;
  C := Connect;
  C.Send(Get);
  O := C.ReadResponse(R);
  AssertTrue('with Send503OnMaxConnections False, a connection beyond the limit ' + C.Describe(O) +
    ', where it is closed without a response', O in [crClosed, crReset]);
  AssertEquals('bytes the server wrote to it', '', C.FBuffer);
  // Once the slot is free, the next connection is served.
  FClients.Remove(Held);
  Held.Free;
  AssertTrue('the kept-alive connection was not freed after its client closed',
    FNoConnections.WaitFor(WatchdogMs) = wrSignaled);
  C := Connect;
  C.Send(Get);
  O := C.ReadResponse(R);
  AssertTrue('a connection once the slot is free ' + C.Describe(O) + ', where it is served',
    (O = crResponse) and (R.Code = 200));
end;

{ Hazards of a fix of the pool }

procedure TTestHTTPServerConnection.TestPoolSharesWorkersBetweenKeepAliveClients;
var
  Workers, Least, Most: Integer;
  Answered: TLoadCounts;
  Outcomes, Counts: string;
begin
  UseKeepAlivePool;
  // As an application may (OnGetSocketHandler): without it B3's delayed-ACK
  // stall, where the series' B3 fix is not applied, paces every client at
  // ~40 ms a request, close to KeepConnectionIdleTimeout (50 ms), and a fix
  // that keeps a worker while its connection's next request comes within
  // that time would lose the worker now and then and look fair.
  FNoDelayAtAccept := True;
  StartServer;
  RunKeepAliveLoad(Workers, Answered, Outcomes);
  Counts := CountsText(Answered, Least, Most);
  AssertTrue(Format('answers per keep-alive client in tmThreadPool, %d clients sending requests back ' +
    'to back for %d ms and on until one had %d answers (at most %d ms) over %d pool workers: %s (%s); ' +
    'every client must be answered at least %d times ' +
    'and the least-served at least 1/%d as often as the most-served, or busy kept-alive connections ' +
    'keep the workers from the others', [Length(Answered), LoadMs, LoadTarget, LoadBoundMs, Workers, Counts, Outcomes,
    FairMinAnswered, FairSpread]), (Least >= FairMinAnswered) and (Least * FairSpread >= Most));
end;

procedure TTestHTTPServerConnection.TestPoolServesConnectionOnOneThreadAtATime;
var
  Workers, Least, Most: Integer;
  Answered: TLoadCounts;
  Outcomes, Counts: string;
begin
  UseKeepAlivePool;
  StartServer;
  RunKeepAliveLoad(Workers, Answered, Outcomes);
  Counts := CountsText(Answered, Least, Most);
  AssertEquals(Format('requests whose handling (DoHandleRequest) began while another thread was ' +
    'handling one on the same connection, %d keep-alive clients over %d pool workers (a connection ' +
    'must be served by one thread at a time)', [Length(Answered), Workers]), 0, Counted(FOverlaps));
  AssertTrue(Format('answers per keep-alive client in tmThreadPool: %s (%s); every client must be ' +
    'answered at least %d times, so that its connection was served again while the others were busy',
    [Counts, Outcomes, FairMinAnswered]), Least >= FairMinAnswered);
end;

{ B18 }

procedure TTestHTTPServerConnection.TestEmptyLinesBeforeRequestAreIgnored;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
begin
  // A kept connection waits the watchdog for its next request; a head that
  // stops coming is given 500 ms.
  UseKeepAliveThreads(WatchdogMs);
  FServer.RequestReadTimeout := 500;
  StartServer;
  // Two empty lines, then a GET, as the first bytes of a connection.
  C := Connect;
  C.Send(CRLF + CRLF + Get('/ping'));
  O := C.ReadResponse(R);
  AssertTrue('a GET after two empty lines at the start of a connection ' + C.Describe(O) +
    ', where the server should ignore the empty lines and answer the GET (RFC 9112 2.2: a server ' +
    'SHOULD ignore at least one empty line received before the request line)', O = crResponse);
  AssertEquals('the status of the GET after the empty lines', 200, R.Code);
  AssertEquals('the body of the GET after the empty lines', 'pong', Trim(R.Body));
  // On a kept connection: a POST and its answer, then a CRLF and a GET in one
  // write (a client that ends a body with CRLF, RFC 2616 4.1).
  C := Connect;
  C.Send('POST /echo HTTP/1.1' + CRLF + 'Host: 127.0.0.1' + CRLF + 'Content-Length: 5' + CRLF + CRLF + 'hello');
  O := C.ReadResponse(R);
  AssertTrue('the POST ' + C.Describe(O), O = crResponse);
  AssertEquals('the body of the POST''s answer', 'hello', Trim(R.Body));
  C.Send(CRLF + Get('/ping'));
  O := C.ReadResponse(R);
  AssertTrue('a GET after an empty line on a kept connection, after a POST was answered, ' +
    C.Describe(O) + ', where the server should ignore the empty line and answer the GET', O = crResponse);
  AssertEquals('the status of the GET after the POST and the empty line', 200, R.Code);
  AssertEquals('requests dispatched', 3, Counted(FRequestsHandled));
  // An empty line, then the end of the stream: no request, the close.
  C := Connect;
  C.Send(CRLF);
  C.ShutdownWrite;
  O := C.ReadResponse(R);
  AssertTrue('an empty line and then the end of the client''s stream ' + C.Describe(O) +
    ', where the server closes the connection without a response', O in [crClosed, crReset]);
  // An empty line, then silence: the quiet close of a connection that sent
  // no request (RequestReadTimeout), not a 408 for a request it never began.
  C := Connect;
  C.Send(CRLF);
  O := C.ReadResponse(R);
  AssertTrue('an empty line and then silence ' + C.Describe(O) + ', where the server closes the ' +
    'connection without a response once RequestReadTimeout (500 ms) has passed', O in [crClosed, crReset]);
  AssertEquals('requests dispatched', 3, Counted(FRequestsHandled));
end;

{ B20 }

procedure TTestHTTPServerConnection.TestAbsoluteFormTarget;

  // One GET of aTarget (Host: aHost) on a new connection, answered; what
  // the application was given for it.
  function Seen(const aTarget, aHost: string): TSeenRequest;
  var
    C: TTestClient;
    R: TTestResponse;
    O: TClientRead;
  begin
    C := Connect;
    C.Send('GET ' + aTarget + ' HTTP/1.1' + CRLF + 'Host: ' + aHost + CRLF + CRLF);
    O := C.ReadResponse(R);
    AssertTrue('"GET ' + aTarget + '" ' + C.Describe(O) + ', where it is answered', O = crResponse);
    AssertEquals('the status of "GET ' + aTarget + '"', 200, R.Code);
    FLock.Enter;
    try
      Result := FSeen;
    finally
      FLock.Leave;
    end;
  end;

  // A target that is not in absolute-form: what the application is given,
  // as before (PathInfo: the target with a '/' before it; the Host field).
  procedure NotAbsolute(const aTarget, aPathInfo: string);
  var
    S: TSeenRequest;
  begin
    S := Seen(aTarget, 'field.example');
    AssertEquals('the PathInfo of "GET ' + aTarget + '" (not absolute-form: left as it was)', aPathInfo, S.PathInfo);
    AssertEquals('the URL of "GET ' + aTarget + '"', aTarget, S.URL);
    AssertEquals('the Host of "GET ' + aTarget + '" (the Host field)', 'field.example', S.Host);
  end;

const
  Target = 'http://target.example:8080/ping?x=1';
var
  S: TSeenRequest;
begin
  FRecordRequests := True;
  StartServer;
  // Origin-form, the control: as it always was.
  S := Seen('/ping?x=1', 'field.example');
  AssertEquals('the PathInfo of an origin-form "GET /ping?x=1"', '/ping', S.PathInfo);
  AssertEquals('the URL of an origin-form "GET /ping?x=1"', '/ping?x=1', S.URL);
  AssertEquals('the QueryString of an origin-form "GET /ping?x=1"', 'x=1', S.QueryString);
  AssertEquals('the query field x of an origin-form "GET /ping?x=1"', '1', S.QueryX);
  AssertEquals('the Host of an origin-form "GET /ping?x=1" (the Host field)', 'field.example', S.Host);
  // Absolute-form, a Host field that names another host.
  S := Seen(Target, 'field.example');
  AssertEquals('the PathInfo of "GET ' + Target + '", a request target in absolute-form, where ' +
    'the server must take the path from the target (RFC 9112 3.2.2: a server MUST accept the ' +
    'absolute-form in requests)', '/ping', S.PathInfo);
  AssertEquals('the URL of "GET ' + Target + '" (what the client sent, which an application that ' +
    'proxies reads)', Target, S.URL);
  AssertEquals('the QueryString of "GET ' + Target + '"', 'x=1', S.QueryString);
  AssertEquals('the query field x of "GET ' + Target + '"', '1', S.QueryX);
  AssertEquals('the Host of "GET ' + Target + '" with the Host field field.example, where the ' +
    'target''s host wins (RFC 9112 3.2.2: the server MUST ignore the Host field)', 'target.example:8080', S.Host);
  // The scheme in any case; no path (as "/": PathInfo '').
  S := Seen('HTTP://Target.Example/ping', 'field.example');
  AssertEquals('the PathInfo of "GET HTTP://Target.Example/ping" (absolute-form, the scheme in capitals)',
    '/ping', S.PathInfo);
  AssertEquals('the Host of "GET HTTP://Target.Example/ping"', 'Target.Example', S.Host);
  S := Seen('https://target.example', 'field.example');
  AssertEquals('the PathInfo of "GET https://target.example" (absolute-form with no path, as "/")',
    '', S.PathInfo);
  AssertEquals('the URL of "GET https://target.example"', 'https://target.example', S.URL);
  // Not absolute-form: left as it was.
  NotAbsolute('ftp://target.example/ping', '/ftp://target.example/ping');
  NotAbsolute('http:/ping', '/http:/ping');
  NotAbsolute('/http://target.example/ping', '/http://target.example/ping');
  AssertEquals('requests dispatched', 7, Counted(FRequestsHandled));
end;

{ set-tcp-nodelay: TCPNoDelay }

procedure TTestHTTPServerConnection.TestTCPNoDelayCanBeSwitchedOff;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  W: TWriteLog;
  I, J: Integer;
  Want: Boolean;
begin
  { By RTTI, so that the program also builds where the property does not exist. }
  AssertTrue('TFPHttpServer has a published TCPNoDelay property (to turn TCP_NODELAY off)',
    IsPublishedProp(FServer, 'TCPNoDelay'));
  AssertEquals('TCPNoDelay by default', 1, GetOrdProp(FServer, 'TCPNoDelay'));
  UseKeepAliveThreads(15000);
  StartServer;
  for I := 0 to 1 do
  begin
    // Each connection takes the server's value when it is accepted.
    Want := I = 0;
    SetOrdProp(FServer, 'TCPNoDelay', Ord(Want));
    C := Connect;
    C.Send(Get('/ping'));
    O := C.ReadResponse(R);
    AssertTrue(Format('the request on connection %d (TCPNoDelay %s) %s',
      [I + 1, BoolToStr(Want, True), C.Describe(O)]), O = crResponse);
    W := WritesOf(I, 0);
    AssertTrue(Format('connection %d: the server''s writes went through its socket handler', [I + 1]),
      Length(W) > 0);
    for J := 0 to High(W) do
      AssertEquals(Format('TCP_NODELAY on at write %d of %d of connection %d, accepted with TCPNoDelay %s',
        [J + 1, Length(W), I + 1, BoolToStr(Want, True)]), Want, W[J]);
  end;
end;

{ coalesce-writes must not break: content set after the application's own SendHeaders }

procedure TTestHTTPServerConnection.TestContentSetAfterOwnHeadersIsSent;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I: Integer;
begin
  UseKeepAliveThreads(15000);
  StartServer;
  C := Connect;
  for I := 1 to 2 do
  begin
    C.Send(Get('/own-headers'));
    O := C.ReadResponse(R);
    AssertTrue(Format('request %d to /own-headers %s', [I, C.Describe(O)]), O = crResponse);
    AssertEquals(Format('response %d: Content-Length is the length of its body', [I]),
      R.ContentLength, Length(R.Body));
    AssertEquals(Format('response %d: the body is the content set after the application sent the ' +
      'headers itself (the content set after them, not "early")', [I]),
      'later', Copy(R.Body, 1, 5));
  end;
end;

{ B21 }

procedure TTestHTTPServerConnection.TestPolledServesKeptAliveRequestOnArrival;
{$IFDEF UNIX}
const
  Requests = 3;
var
  C: TTestClient;
  R: TTestResponse;
  O: TClientRead;
  I: Integer;
begin
  { An accept-idle interval four times the watchdog: a tmPolled server that reads a
    kept-alive connection's next request only on the accept-idle tick cannot answer
    any of them within the client's watchdog, one that reads it when it arrives
    answers each at once. A count of answers, in one run. }
  FServer.ThreadMode := tmPolled;
  FServer.KeepConnections := True;
  FServer.KeepConnectionTimeout := 15000;
  FServer.AcceptIdleTimeout := 4 * WatchdogMs;
  StartServer;
  C := Connect;
  for I := 1 to Requests do
  begin
    C.Send(Get('/ping'));
    O := C.ReadResponse(R);
    if O <> crResponse then
      Fail(Format('request %d of %d, one after the other on one kept-alive connection in tmPolled with ' +
        'AcceptIdleTimeout %d ms: the request %s (a request must be read when it arrives, not on the ' +
        'next accept-idle tick)', [I, Requests, FServer.AcceptIdleTimeout, C.Describe(O)]));
  end;
end;
{$ELSE}
begin
  Ignore('tmPolled waits for the listener and its connections with fpPoll, which is Unix only: ' +
    'on this platform it keeps the accept-idle tick');
end;
{$ENDIF}

initialization

  RegisterTest(TTestHTTPServerConnection);

end.
