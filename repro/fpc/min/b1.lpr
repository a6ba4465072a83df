program b1;
{ B1: TFPCustomHttpServer stores OnAllowConnect and never calls it.  Since
  the connection cap (MaxLiveConnectionCount) the listener's
  OnConnectSocketQuery is TFPCustomHttpServer.DoOnAllowConnect, which
  decides on the cap alone and drops the user's handler: a handler that
  refuses a client, or sets TCP_NODELAY on its socket, silently does
  nothing.  FPC 3.2.2 called it (it was the listener's OnConnectQuery).

  Compile:  fpc b1.lpr      (FPC trunk; 3.2.2 too)
  Run:      ./b1 8080        (the port; it prints what it listens on)
  Command:  for i in 1 2 3; do curl -s -o /dev/null http://127.0.0.1:8080/; done
  Expected: the server prints 3 "OnAllowConnect: socket N" lines, each
            before its "request /" line
  Actual:   3 "request /" lines, no "OnAllowConnect" line
  FPC 3.2.2: 3 "OnAllowConnect" lines (not affected). }
{$mode objfpc}{$H+}
uses {$ifdef unix}cthreads,{$endif} SysUtils, fphttpserver;

type
  TServer = class(TFPHttpServer)
    procedure AllowConnect(Sender: TObject; ASocket: Longint; var Allow: Boolean);
    procedure Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
      var AResponse: TFPHTTPConnectionResponse);
  end;

procedure TServer.AllowConnect(Sender: TObject; ASocket: Longint; var Allow: Boolean);
begin
  WriteLn('OnAllowConnect: socket ', ASocket);
  Flush(Output);
  Allow := True;
end;

procedure TServer.Serve(Sender: TObject; var ARequest: TFPHTTPConnectionRequest;
  var AResponse: TFPHTTPConnectionResponse);
begin
  WriteLn('request ', ARequest.URI);
  Flush(Output);
  AResponse.Content := 'pong';
end;

var
  Server: TServer;
begin
  Server := TServer.Create(nil);
  Server.Address := '127.0.0.1';
  Server.Port := StrToIntDef(ParamStr(1), 8080);
  Server.OnAllowConnect := @Server.AllowConnect;
  Server.OnRequest := @Server.Serve;
  WriteLn('b1: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
