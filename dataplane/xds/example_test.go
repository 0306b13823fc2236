package xds_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/dataplane/xds"
)

// Example shows the wiring on both sides: the operator owns the CA and the Server, a proxy holds a
// client certificate for its gateway and runs a Client whose Apply would be (*proxy.Server).Update.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Operator: the CA (persisted with Marshal/LoadCA), the server certificate and the Server.
	ca, _ := xds.NewCA("fleetgate", 365*24*time.Hour)
	serverKP, _ := ca.IssueServer([]string{"127.0.0.1"}, 90*24*time.Hour)
	serverTLS, _ := xds.ServerTLSConfig(serverKP, ca.CertPEM())
	changed := make(chan string, 16)
	srv := xds.NewServer(xds.ServerOptions{TLS: serverTLS, Logger: logr.Discard(), OnChange: func(gw string) {
		select {
		case changed <- gw: // a controller would enqueue the gateway here
		default:
		}
	}})
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = srv.Serve(ctx, lis) }()

	// Proxy: a client certificate naming its gateway (shipped in a Secret), and the Client.
	const gateway = "cluster-1/default/web"
	clientKP, _ := ca.IssueClient([]string{gateway}, 90*24*time.Hour)
	clientTLS, _ := xds.ClientTLSConfig(clientKP, ca.CertPEM(), "127.0.0.1")
	client, _ := xds.NewClient(xds.ClientOptions{
		Address: lis.Addr().String(), TLS: clientTLS, Gateway: gateway, Node: "web-7d9f-abcde",
		Apply: func(u *ir.Update) error { return u.Base.Validate() }, Logger: logr.Discard(),
	})
	go func() { _ = client.Run(ctx) }()

	// Controller: set the config, then set Programmed from the status on every OnChange.
	v := srv.SetConfig(gateway, &ir.Config{Listeners: []ir.Listener{{Name: "http-80", Port: 80, Protocol: ir.ProtocolHTTP}}})
	for range changed {
		if ok, _ := srv.Programmed(gateway, v); ok {
			break
		}
	}
	fmt.Println("programmed at version", v)
	// Output: programmed at version 1
}
