#!/usr/bin/env python3
"""Writes an ir.Config JSON with N hostnames for the fleetgate proxy benchmark.

With TLS_PORT, TLS_CERT and TLS_KEY in the environment it adds an HTTPS listener on TLS_PORT with
the same hosts and that certificate (PEM files) for every name. With CHANGE_HOSTS=1 the "api" route's
prefix carries the version, so that files of two versions differ in every host, not only in their
version. With DISTINCT_ROUTES=1 it carries the host's number too, so that every host's routes are its
own (no two hosts share a route list).
"""
import base64
import json
import os
import sys

n, port, backend_port, version = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1
be = {"name": "bench/default/echo:80", "weight": 1, "endpoints": [{"address": "127.0.0.1", "port": backend_port}]}
api = "/api" + (f"/v{version}" if os.environ.get("CHANGE_HOSTS") else "")


def routes(host):
    prefix = api + (f"/h{host}" if os.environ.get("DISTINCT_ROUTES") else "")
    return [
        {"name": "exact", "match": {"path": {"type": "Exact", "value": "/healthz"}}, "backends": [be]},
        {"name": "api", "match": {"path": {"type": "Prefix", "value": prefix}}, "backends": [be]},
        {"name": "root", "match": {"path": {"type": "Prefix", "value": "/"}}, "backends": [be]},
    ]


vhosts = [{"hostname": f"host{i}.example.com", "routes": routes(i)} for i in range(n)]
listeners = [{"name": "http", "port": port, "protocol": "HTTP", "virtualHosts": vhosts}]
if os.environ.get("TLS_PORT"):
    pem = lambda path: base64.b64encode(open(path, "rb").read()).decode()
    cert = {"name": "bench", "certPEM": pem(os.environ["TLS_CERT"]), "keyPEM": pem(os.environ["TLS_KEY"])}
    listeners.append({"name": "https", "port": int(os.environ["TLS_PORT"]), "protocol": "HTTPS",
                      "certificates": [cert], "virtualHosts": vhosts})
cfg = {"gateway": "bench/gw", "version": version, "listeners": listeners}
json.dump(cfg, sys.stdout)
