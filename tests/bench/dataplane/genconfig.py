#!/usr/bin/env python3
"""Writes an ir.Config JSON with N hostnames for the fleetgate proxy benchmark."""
import json
import sys

n, port, backend_port, version = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1
be = {"name": "bench/default/echo:80", "weight": 1, "endpoints": [{"address": "127.0.0.1", "port": backend_port}]}
routes = [
    {"name": "exact", "match": {"path": {"type": "Exact", "value": "/healthz"}}, "backends": [be]},
    {"name": "api", "match": {"path": {"type": "Prefix", "value": "/api"}}, "backends": [be]},
    {"name": "root", "match": {"path": {"type": "Prefix", "value": "/"}}, "backends": [be]},
]
vhosts = [{"hostname": f"host{i}.example.com", "routes": routes} for i in range(n)]
cfg = {"gateway": "bench/gw", "version": version,
       "listeners": [{"name": "http", "port": port, "protocol": "HTTP", "virtualHosts": vhosts}]}
json.dump(cfg, sys.stdout)
