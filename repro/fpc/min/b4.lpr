program b4;
{ B4: the server closes the connection after a response without saying
  so: no "Connection: close" header, then FIN.  With the defaults
  (KeepConnections off) that is every response.  A client that pools
  connections (HTTP/1.1 keeps them by default) may send its next request
  on the socket the server has just closed and gets EOF or ECONNRESET.

  Compile:  fpc b4.lpr      (FPC trunk; 3.2.2 too)
  Run:      ./b4 8080        (the port; it prints what it listens on)
  Command:  curl -sv http://127.0.0.1:8080/ http://127.0.0.1:8080/ 2>&1 >/dev/null | grep -E '^(< HTTP|< Connection:|\* Connected|\* Connection|\* Closing)'
  Expected: "< Connection: close" in each response, since the server
            closes each connection after it ("* Closing connection 0")
  Actual:   no "< Connection:" line; curl keeps the socket ("* Connection
            #0 to host 127.0.0.1 left intact") and finds it closed only
            when it comes to reuse it ("* Connection 0 seems to be dead")
  FPC 3.2.2: the same. }
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
  WriteLn('b4: listening on 127.0.0.1:', Server.Port);
  Flush(Output);
  Server.Active := True;
end.
