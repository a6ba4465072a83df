{ kithorse: a Horse application with the kit's route contract (DESIGN.md
  sections 7.2-7.4), written against Horse's public API only (THorse.Get,
  THorse.Post, THorse.Listen), so that the kit's drivers run unchanged
  against Horse's own providers built from source (repro/horse/build.sh):
  the FPC provider (Horse.Provider.FPC.HTTPApplication, the default) and,
  built with -dHORSE_PROVIDER_EPOLL, the epoll provider.

  Routes:  GET /ping -> "pong";  POST /echo -> the body;
           GET /slow?ms=N -> waits N ms, then "done";  GET /bytes/N -> N bytes.

  Flags:   --port N (0: a free port is chosen, see PickPort), --address A,
           --horse (Horse's settings: the only ones a Horse application has).
           Every other kit flag names an fphttpserver property that Horse's
           public API does not reach: exit 2, "unsupported: ...", which the
           kit reads as "this scenario does not apply" (DESIGN 7.2).  Without
           --horse the driver asks for fphttpserver's defaults (KeepConnections
           off): the FPC provider on FPC >= 3.3.1 turns keep-alive on
           unconditionally (EnableServerKeepAlive), so that is unsupported too.

  stdout:  "listening ADDR:PORT" once the port listens (a connect() to it
           succeeds; on Windows, it is in the TCP table as listening).
  stderr:  "kithorse: conn=<id> req=<n> ..." per served request.  <id> is
           the client's port as the server's socket sees it (FPC provider:
           TFPHTTPConnectionRequest.Connection.Socket.RemoteAddress, reached
           through Horse's public RawWebRequest); the epoll provider hands
           the handler no connection identity, so it logs "conn=?" and the
           kit cannot prove reuse from the server side. }

program kithorse;

{$MODE DELPHI}{$H+}

uses
  {$IFDEF UNIX}cthreads, BaseUnix,{$ENDIF}
  Classes, SysUtils, Sockets, ssockets,
  {$IFNDEF HORSE_PROVIDER_EPOLL}fphttpserver,{$ENDIF}
  Horse;

const
  ExitUnsupported = 2;
  { --port 0: a port below Linux's ephemeral range (32768-60999), so that no
    client's connect() can take it between the test bind and Horse's. }
  PickLow = 20000;
  PickHigh = 32000;

var
  LogLock: TRTLCriticalSection;
  Address: string = '127.0.0.1';
  Port: Integer = -1;
  PortsSeen: TStringList;          { client port -> requests served }
  ReadyFd: THandle;                { where the contract line goes }

procedure LogLine(const S: string);
begin
  EnterCriticalSection(LogLock);
  try
    Write(StdErr, 'kithorse: ' + S + #10);
    Flush(StdErr);
  finally
    LeaveCriticalSection(LogLock);
  end;
end;

procedure Unsupported(const Why: string);
begin
  Write(StdErr, 'unsupported: ' + Why + #10);
  Halt(ExitUnsupported);
end;

{ The connection identity and its request count, FPC provider only. }
procedure ConnOf(Req: THorseRequest; out Id: string; out No: Integer);
var
  {$IFNDEF HORSE_PROVIDER_EPOLL}
  Raw: TObject;
  {$ENDIF}
  I: Integer;
begin
  Id := '?';
  No := 0;
  {$IFNDEF HORSE_PROVIDER_EPOLL}
  Raw := Req.RawWebRequest;
  if (Raw is TFPHTTPConnectionRequest) and Assigned(TFPHTTPConnectionRequest(Raw).Connection) then
    Id := IntToStr(NToHs(TFPHTTPConnectionRequest(Raw).Connection.Socket.RemoteAddress.sin_port));
  {$ENDIF}
  if Id = '?' then
    Exit;
  EnterCriticalSection(LogLock);
  try
    I := PortsSeen.IndexOf(Id);
    if I < 0 then
      I := PortsSeen.AddObject(Id, nil);
    No := PtrInt(PortsSeen.Objects[I]) + 1;
    PortsSeen.Objects[I] := TObject(PtrInt(No));
  finally
    LeaveCriticalSection(LogLock);
  end;
end;

procedure Served(Req: THorseRequest; const Path: string);
var
  Id: string;
  No: Integer;
begin
  ConnOf(Req, Id, No);
  LogLine(Format('conn=%s req=%d %s', [Id, No, Path]));
end;

procedure GetPing(Req: THorseRequest; Res: THorseResponse);
begin
  Served(Req, 'GET /ping');
  Res.Send('pong');
end;

procedure PostEcho(Req: THorseRequest; Res: THorseResponse);
begin
  Served(Req, 'POST /echo');
  Res.Send(Req.Body);
end;

procedure GetSlow(Req: THorseRequest; Res: THorseResponse);
var
  Ms: Integer;
begin
  Served(Req, 'GET /slow');
  Ms := StrToIntDef(Req.Query.Items['ms'], 0);
  if Ms > 60000 then
    Ms := 60000;
  if Ms > 0 then
    Sleep(Ms);
  Res.Send('done');
end;

procedure GetBytes(Req: THorseRequest; Res: THorseResponse);
var
  N: Integer;
begin
  Served(Req, 'GET /bytes');
  N := StrToIntDef(Req.Params.Items['n'], 0);
  if (N < 0) or (N > 16 * 1024 * 1024) then
    N := 0;
  Res.Send(StringOfChar('x', N));
end;

{ A port nobody holds: bind it once, close, hand it to Horse (whose
  providers take no port 0: the FPC provider replaces 0 by 9000). }
function PickPort: Integer;
var
  S, I: Integer;
  A: TInetSockAddr;
begin
  { Not Randomize alone: servers started in the same millisecond would
    draw the same ports. }
  RandSeed := Cardinal(GetProcessID) * 2654435761 xor Cardinal(GetTickCount64);
  for I := 1 to 200 do
  begin
    Result := PickLow + Random(PickHigh - PickLow);
    S := fpSocket(AF_INET, SOCK_STREAM, 0);
    FillChar(A, SizeOf(A), 0);
    A.sin_family := AF_INET;
    A.sin_port := HToNs(Result);
    A.sin_addr := StrToNetAddr(Address);
    if fpBind(S, @A, SizeOf(A)) = 0 then
    begin
      CloseSocket(S);
      Exit;
    end;
    CloseSocket(S);
  end;
  raise Exception.Create('no free port');
end;

{ stdout carries the contract line only.  Horse's epoll provider writes its
  own progress to stdout (Writeln in its workers), so on Unix the program's
  stdout is moved to stderr and the line goes to the saved descriptor. }
procedure KeepStdoutForReadyLine;
begin
  {$IFDEF UNIX}
  ReadyFd := fpDup(1);
  fpDup2(2, 1);
  {$ENDIF}
end;

procedure WriteReady(const S: string);
begin
  {$IFDEF UNIX}
  fpWrite(ReadyFd, S[1], Length(S));
  {$ELSE}
  Write(Output, S);
  Flush(Output);
  {$ENDIF}
end;

type
  { Prints the contract line once the listening socket takes connections:
    Horse's own Listen callback runs before the socket is bound. }
  TListenWatcher = class(TThread)
  protected
    procedure Execute; override;
  end;

{$IFDEF MSWINDOWS}
{ Windows: the listener is found in the TCP table (iphlpapi GetTcpTable),
  without connecting: the kit counts TCP_NODELAY calls per served
  connection under Wine, and a readiness connection would be one more
  accepted connection that serves nothing. }
type
  TMibTcpRow = record
    State, LocalAddr, LocalPort, RemoteAddr, RemotePort: DWord;
  end;

function GetTcpTable(Table: Pointer; var Size: DWord; Order: LongBool): DWord; stdcall;
  external 'iphlpapi.dll' name 'GetTcpTable';

function Listening(APort: Integer): Boolean;
const
  StateListen = 2;
var
  Size: DWord;
  Buf: array of Byte;
  N, I: DWord;
  Row: ^TMibTcpRow;
begin
  Result := False;
  Size := 0;
  GetTcpTable(nil, Size, False);
  SetLength(Buf, Size + 4096);
  Size := Length(Buf);
  if GetTcpTable(@Buf[0], Size, False) <> 0 then
    Exit;
  N := PDWord(@Buf[0])^;
  Row := Pointer(@Buf[SizeOf(DWord)]);
  for I := 1 to N do
  begin
    if (Row^.State = StateListen) and (NToHs(Word(Row^.LocalPort)) = APort) then
      Exit(True);
    Inc(Row);
  end;
end;
{$ELSE}
function Listening(APort: Integer): Boolean;
var
  C: TInetSocket;
begin
  try
    C := TInetSocket.Create(Address, APort);
    C.Free;
    Result := True;
  except
    on ESocketError do
      Result := False;
  end;
end;
{$ENDIF}

procedure WaitAndReport;
var
  I: Integer;
begin
  for I := 1 to 6000 do          { up to 60 s, polled: Wine starts slowly }
  begin
    if Listening(Port) then
    begin
      WriteReady(Format('listening %s:%d', [Address, Port]) + #10);
      Exit;
    end;
    Sleep(10);
  end;
  LogLine('never saw the port listening');
end;

procedure TListenWatcher.Execute;
begin
  WaitAndReport;
end;

procedure ParseFlags;
var
  I: Integer;
  Horse: Boolean;
begin
  Horse := False;
  I := 1;
  while I <= ParamCount do
  begin
    if (ParamStr(I) = '--port') and (I < ParamCount) then
    begin
      Port := StrToInt(ParamStr(I + 1));
      Inc(I);
    end
    else if (ParamStr(I) = '--address') and (I < ParamCount) then
    begin
      Address := ParamStr(I + 1);
      Inc(I);
    end
    else if ParamStr(I) = '--horse' then
      Horse := True
    else
      Unsupported(ParamStr(I) + ': Horse''s public API has no such setting');
    Inc(I);
  end;
  {$IF not defined(HORSE_PROVIDER_EPOLL) and (FPC_FULLVERSION >= 30301)}
  if not Horse then
    Unsupported('fphttpserver''s defaults (KeepConnections off): Horse''s FPC provider '
      + 'turns keep-alive on (EnableServerKeepAlive), only --horse applies');
  {$ENDIF}
  if Port < 0 then
    Unsupported('--port N is required');
end;

begin
  InitCriticalSection(LogLock);
  PortsSeen := TStringList.Create;
  PortsSeen.Sorted := True;
  ParseFlags;
  KeepStdoutForReadyLine;
  if Port = 0 then
    Port := PickPort;
  THorse.Get('/ping', GetPing);
  THorse.Post('/echo', PostEcho);
  THorse.Get('/slow', GetSlow);
  THorse.Get('/bytes/:n', GetBytes);
  {$IFDEF HORSE_PROVIDER_EPOLL}
  { The epoll provider calls the Listen callback once its listening sockets
    exist (InternalListen, then it blocks while running): readiness is
    reported from there, so that the process has only Horse's threads (the
    dispatch benchmark counts them). }
  THorse.Listen(Port, Address, WaitAndReport);
  {$ELSE}
  TListenWatcher.Create(False);  { the FPC provider's Listen blocks in Run }
  THorse.Listen(Port, Address);
  {$ENDIF}
end.
