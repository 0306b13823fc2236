// Command dnsserver stands in for the coredns pod of the conformance base manifests: it answers
// every query on UDP :53 the way coredns's whoami plugin does (the client's address in an A record).
package main

import (
	"log"
	"net"

	"github.com/miekg/dns"
)

func main() {
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		if addr, ok := w.RemoteAddr().(*net.UDPAddr); ok && len(r.Question) > 0 {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET},
				A:   addr.IP.To4(),
			})
		}
		if err := w.WriteMsg(m); err != nil {
			log.Printf("reply: %v", err)
		}
		log.Printf("answered %v for %s", r.Question, w.RemoteAddr())
	})
	srv := &dns.Server{Addr: ":53", Net: "udp", Handler: mux}
	log.Fatal(srv.ListenAndServe())
}
