program freehang;
{ Does TFPHttpServer.Free return while a (kept-alive) client is connected?
  usage: freehang MODE CLIENT KCT RRT PORT [WATCHDOG_S [KIT [AIT]]]
    MODE    none | polled | thread | pool           (3.2.2: none | thread)
    CLIENT  nobody | close | stay | half | fresh-half | silent
              close      one GET keep-alive, answer read, client closes
              stay       one GET keep-alive, answer read, socket kept open
              half       as stay, then half a second request head sent
              fresh-half a new connection that sends half a head only
              silent     a new connection that sends nothing
    KCT     KeepConnectionTimeout ms (-1: leave the default)
    RRT     RequestReadTimeout ms    (-1: leave the default)
    KIT     KeepConnectionIdleTimeout ms (-1 default)
    AIT     AcceptIdleTimeout ms (default 100) }
{$mode objfpc}{$H+}
{$if FPC_FULLVERSION>=30300}{$define TRUNK}{$endif}
uses
  {$ifdef unix}cthreads, BaseUnix,{$endif} SysUtils, Classes, SyncObjs, Sockets,
  ssockets, httpdefs, fphttpserver;

var
  T0: QWord;
  LogLock: TCriticalSection;
  IdleTicks: LongInt = 0;
  IdleAtClose: LongInt = -1;
  CloseAt: QWord = 0;
  LastResp: QWord = 0;
  FreeStart: QWord = 0;
  KCT: Integer = -1;
  Destroyed: LongInt = 0;

function Ms: Int64;
begin
  Result := Int64(GetTickCount64 - T0);
end;

procedure Log(const S: string);
var
  Who: string;
begin
  if GetCurrentThreadId = MainThreadID then Who := 'main' else Who := 'thr ';
  LogLock.Enter;
  try
    WriteLn(Format('[%6d ms %s] %s', [Ms, Who, S]));
    Flush(Output);
  finally
    LogLock.Leave;
  end;
end;

type
  TMyConn = class(TFPHTTPConnection)
  public
    destructor Destroy; override;
  end;

  TMyServer = class(TFPHttpServer)
  protected
    function CreateConnection(Data: TSocketStream): TFPHTTPConnection; override;
    {$ifdef TRUNK}
    function CreateConnectionHandler: TFPHTTPServerConnectionHandler; override;
    {$endif}
    procedure HandleRequest(var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse); override;
  public
    procedure KeepIdle(Sender: TObject);
  end;

{$ifdef TRUNK}
  TLSimple = class(TFPSimpleConnectionHandler)
  public
    function WaitForRequests(MaxAttempts: Integer = 10): Boolean; override;
    procedure CloseSockets; override;
  end;
  TLPolled = class(TFPPolledConnectionHandler)
  public
    function WaitForRequests(MaxAttempts: Integer = 10): Boolean; override;
    procedure CloseSockets; override;
  end;
  TLThreaded = class(TFPThreadedConnectionHandler)
  public
    function WaitForRequests(MaxAttempts: Integer = 10): Boolean; override;
    procedure CloseSockets; override;
  end;
  TLPooled = class(TFPPooledConnectionHandler)
  public
    function WaitForRequests(MaxAttempts: Integer = 10): Boolean; override;
    procedure CloseSockets; override;
  end;
{$endif}

  TServerThread = class(TThread)
  public
    Server: TMyServer;
    Done: TEvent;
    procedure Execute; override;
  end;

  TWatchdog = class(TThread)
  public
    Secs: Integer;
    Done: TEvent;
    procedure Execute; override;
  end;

function Deadline: string;
begin
  if (LastResp = 0) or (KCT <= 0) then
    Result := ''
  else
    Result := Format(' (keep-alive deadline in %d ms)',
      [Int64(LastResp + QWord(KCT)) - Int64(GetTickCount64)]);
end;

destructor TMyConn.Destroy;
var
  After: string;
begin
  InterlockedIncrement(Destroyed);
  if CloseAt > 0 then
    After := Format('; %d ms after CloseSockets, %d keep-alive idle ticks after it',
      [Int64(GetTickCount64 - CloseAt), IdleTicks - IdleAtClose])
  else
    After := '; before CloseSockets';
  Log(Format('connection %s destroyed (idle ticks so far %d%s)%s',
    [{$ifdef TRUNK}ConnectionID{$else}IntToStr(PtrUInt(Self) and $FFFF){$endif}, IdleTicks, After, Deadline]));
  inherited Destroy;
end;

function TMyServer.CreateConnection(Data: TSocketStream): TFPHTTPConnection;
begin
  Result := TMyConn.Create(Self, Data);
  Log('connection accepted');
end;

procedure TMyServer.HandleRequest(var ARequest: TFPHTTPConnectionRequest;
  var AResponse: TFPHTTPConnectionResponse);
begin
  AResponse.Code := 200;
  AResponse.Content := 'ok';
  AResponse.ContentLength := 2;
end;

procedure TMyServer.KeepIdle(Sender: TObject);
begin
  InterlockedIncrement(IdleTicks);
end;

{$ifdef TRUNK}
function TMyServer.CreateConnectionHandler: TFPHTTPServerConnectionHandler;
begin
  case ThreadMode of
    tmNone: Result := TLSimple.Create(Self);
    tmPolled: Result := TLPolled.Create(Self);
    tmThread: Result := TLThreaded.Create(Self);
    tmThreadPool: Result := TLPooled.Create(Self);
  end;
end;

procedure WFREnter(H: TFPHTTPServerConnectionHandler; M: Integer);
begin
  Log(Format('WaitForRequests(%d) enter, %d connection(s)%s',
    [M, H.GetActiveConnectionCount, Deadline]));
end;

procedure WFRLeave(H: TFPHTTPServerConnectionHandler; R: Boolean);
begin
  Log(Format('WaitForRequests leave: result %s, %d connection(s)',
    [BoolToStr(R, True), H.GetActiveConnectionCount]));
end;

procedure CSEnter(H: TFPHTTPServerConnectionHandler);
begin
  IdleAtClose := IdleTicks;
  CloseAt := GetTickCount64;
  Log(Format('CloseSockets enter, %d connection(s), idle ticks so far %d',
    [H.GetActiveConnectionCount, IdleTicks]));
end;

procedure CSLeave(H: TFPHTTPServerConnectionHandler);
begin
  Log(Format('CloseSockets leave, %d connection(s)', [H.GetActiveConnectionCount]));
end;

function TLSimple.WaitForRequests(MaxAttempts: Integer): Boolean;
begin
  WFREnter(Self, MaxAttempts);
  Result := inherited WaitForRequests(MaxAttempts);
  WFRLeave(Self, Result);
end;

procedure TLSimple.CloseSockets;
begin
  CSEnter(Self);
  inherited CloseSockets;
  CSLeave(Self);
end;

function TLPolled.WaitForRequests(MaxAttempts: Integer): Boolean;
begin
  WFREnter(Self, MaxAttempts);
  Result := inherited WaitForRequests(MaxAttempts);
  WFRLeave(Self, Result);
end;

procedure TLPolled.CloseSockets;
begin
  CSEnter(Self);
  inherited CloseSockets;
  CSLeave(Self);
end;

function TLThreaded.WaitForRequests(MaxAttempts: Integer): Boolean;
begin
  WFREnter(Self, MaxAttempts);
  Result := inherited WaitForRequests(MaxAttempts);
  WFRLeave(Self, Result);
end;

procedure TLThreaded.CloseSockets;
begin
  CSEnter(Self);
  inherited CloseSockets;
  CSLeave(Self);
end;

function TLPooled.WaitForRequests(MaxAttempts: Integer): Boolean;
begin
  WFREnter(Self, MaxAttempts);
  Result := inherited WaitForRequests(MaxAttempts);
  WFRLeave(Self, Result);
end;

procedure TLPooled.CloseSockets;
begin
  CSEnter(Self);
  inherited CloseSockets;
  CSLeave(Self);
end;
{$endif}

procedure TServerThread.Execute;
begin
  try
    Server.Active := True;
  except
    on E: Exception do
      Log('server thread: ' + E.ClassName + ': ' + E.Message);
  end;
  Log('accept loop ended (Active:=True returned)');
  Done.SetEvent;
end;

procedure TWatchdog.Execute;
begin
  if Done.WaitFor(Secs * 1000) <> wrSignaled then
  begin
    Log(Format('RESULT free=HANG: Free did not return within %d s (%d connection(s) destroyed)%s',
      [Secs, Destroyed, Deadline]));
    {$ifdef unix}FpExit(3);{$else}Halt(3);{$endif}
  end;
end;

procedure SendStr(C: TInetSocket; const S: string);
begin
  if C.Write(S[1], Length(S)) <> Length(S) then
    raise Exception.Create('short write');
end;

function ReadResponse(C: TInetSocket): string;
var
  Buf: array[0..4095] of Char;
  N: Integer;
  Chunk: string;
begin
  Result := '';
  repeat
    N := C.Read(Buf, SizeOf(Buf));
    if N <= 0 then
      raise Exception.CreateFmt('client read %d (after %d bytes)', [N, Length(Result)]);
    SetString(Chunk, PChar(@Buf[0]), N);
    Result := Result + Chunk;
  until Pos(#13#10#13#10'ok', Result) > 0;
end;

var
  Server: TMyServer;
  ST: TServerThread;
  WD: TWatchdog;
  C, C2: TInetSocket;
  Mode, Client: string;
  RRT, KIT, AIT, Port, WDS, I: Integer;
  R: string;
  TFree, TStop: Int64;
begin
  T0 := GetTickCount64;
  LogLock := TCriticalSection.Create;
  if ParamCount < 5 then
  begin
    WriteLn('usage: freehang MODE CLIENT KCT RRT PORT [WATCHDOG_S [KIT [AIT]]]');
    Halt(1);
  end;
  Mode := ParamStr(1);
  Client := ParamStr(2);
  KCT := StrToInt(ParamStr(3));
  RRT := StrToInt(ParamStr(4));
  Port := StrToInt(ParamStr(5));
  WDS := StrToIntDef(ParamStr(6), 40);
  KIT := StrToIntDef(ParamStr(7), -1);
  AIT := StrToIntDef(ParamStr(8), 100);
  Server := TMyServer.Create(nil);
  Server.Port := Port;
  Server.AcceptIdleTimeout := AIT;
  {$ifdef TRUNK}
  if Mode = 'none' then Server.ThreadMode := tmNone
  else if Mode = 'polled' then Server.ThreadMode := tmPolled
  else if Mode = 'thread' then Server.ThreadMode := tmThread
  else if Mode = 'pool' then Server.ThreadMode := tmThreadPool
  else raise Exception.Create('mode?');
  Server.KeepConnections := True;
  if KCT >= 0 then Server.KeepConnectionTimeout := KCT;
  if RRT >= 0 then Server.RequestReadTimeout := RRT;
  if KIT >= 0 then Server.KeepConnectionIdleTimeout := KIT;
  KCT := Server.KeepConnectionTimeout;
  Server.OnKeepConnectionIdle := @Server.KeepIdle;
  Log(Format('trunk: mode %s client %s KeepConnectionTimeout %d RequestReadTimeout %d KeepConnectionIdleTimeout %d AcceptIdleTimeout %d',
    [Mode, Client, Server.KeepConnectionTimeout, Server.RequestReadTimeout,
     Server.KeepConnectionIdleTimeout, Server.AcceptIdleTimeout]));
  {$else}
  if Mode = 'thread' then Server.Threaded := True
  else if Mode = 'none' then Server.Threaded := False
  else raise Exception.Create('mode? (3.2.2: none|thread)');
  KCT := 0;
  Log(Format('3.2.2: mode %s client %s (no keep-alive settings in 3.2.2) AcceptIdleTimeout %d',
    [Mode, Client, Server.AcceptIdleTimeout]));
  {$endif}
  ST := TServerThread.Create(True);
  ST.Server := Server;
  ST.Done := TEvent.Create(nil, True, False, '');
  ST.Start;

  C := nil;
  C2 := nil;
  if Client <> 'nobody' then
  begin
    for I := 1 to 100 do
      try
        C := TInetSocket.Create('127.0.0.1', Port);
        Break;
      except
        Sleep(30);
      end;
    if C = nil then raise Exception.Create('cannot connect');
    C.IOTimeout := 5000;
    if (Client = 'close') or (Client = 'stay') or (Client = 'half') or (Client = 'late-close') then
    begin
      SendStr(C, 'GET / HTTP/1.1'#13#10'Host: x'#13#10'Connection: keep-alive'#13#10#13#10);
      R := ReadResponse(C);
      LastResp := GetTickCount64;
      Log('client: response read: ' + Copy(R, 1, Pos(#13, R) - 1));
      if Client = 'close' then
      begin
        FreeAndNil(C);
        Log('client: closed its socket');
      end
      else if Client = 'half' then
      begin
        SendStr(C, 'GET /second HTTP/1.1'#13#10'Host: x'#13#10);
        Log('client: sent half a second head');
      end;
    end
    else if Client = 'fresh-half' then
    begin
      SendStr(C, 'GET / HTTP/1.1'#13#10'Host: x'#13#10);
      Log('client: new connection, sent half a head');
    end
    else if Client = 'silent' then
      Log('client: new connection, sends nothing');
  end
  else
    Sleep(300);
  Sleep(StrToIntDef(GetEnvironmentVariable('FH_DELAY'), 500));

  Log('main: Active:=False' + Deadline);
  TStop := Ms;
  Server.Active := False;
  if ST.Done.WaitFor(WDS * 1000) <> wrSignaled then
  begin
    Log(Format('RESULT accept-loop=HANG: the accept loop did not end within %d s', [WDS]));
    {$ifdef unix}FpExit(4);{$else}Halt(4);{$endif}
  end;
  TStop := Ms - TStop;
  ST.WaitFor;
  if Client = 'late-close' then
  begin
    FreeAndNil(C);
    Log('client: closed its socket after the accept loop ended');
    Sleep(200);
  end;

  WD := TWatchdog.Create(True);
  WD.Secs := WDS;
  WD.Done := TEvent.Create(nil, True, False, '');
  WD.Start;
  FreeStart := GetTickCount64;
  Log('main: Free start' + Deadline);
  Server.Free;
  TFree := Int64(GetTickCount64 - FreeStart);
  WD.Done.SetEvent;
  Log(Format('RESULT free=%d ms (accept loop stopped in %d ms; %d connection(s) destroyed)',
    [TFree, TStop, Destroyed]));
  C.Free;
  C2.Free;
end.
