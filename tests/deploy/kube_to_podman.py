#!/usr/bin/env python3
"""Turns deploy/k8s/ (plus an overlay) into what `podman kube play` 4.3.1 can
play, for tests/deploy/kube.sh. What it changes, and why (podman 4.3.1):

- Deployment: one Pod per replica, named PREFIX-DEPLOYMENT-I. podman plays a
  Deployment's replicas itself, but as pods DEPLOYMENT-pod-I with the same
  hostPorts (the second one fails to start) and one shared volume per emptyDir.
- Service: dropped (podman has no Services). Its name becomes a DNS alias, on
  the run's network, of the pods its selector matches: kube.sh plays each
  Deployment's file with --network NET:alias=SERVICE, so "redis" and
  "fake-healthy" resolve as in a cluster (podman itself resolves pod names
  only).
- Secret: written out as a podman secret (PREFIX-NAME.json, which kube.sh
  hands to `podman secret create`) and dropped from the YAML: podman 4.3.1
  stores a Secret document as it is (YAML) but its secretKeyRef reads a flat
  JSON object of base64 values, so a played Secret cannot be read back.
- ConfigMap, PersistentVolumeClaim: kept, renamed PREFIX-NAME (podman makes a
  named volume of each, in one namespace for the whole machine).
- emptyDir: renamed POD-VOLUME (podman makes a named volume of it, shared by
  every pod that names it the same).
- containerPort: only the ports given with --publish are kept, with a
  hostPort on 127.0.0.1 (kubectl reaches pods through the Service or
  port-forward; the test through the host's loopback). podman 4.3.1 publishes
  every containerPort on the host, on all addresses, at the same number
  (Redis on *:6379) unless it has a hostPort; a probe's named port becomes its
  number first.
- livenessProbe: podman makes a healthcheck of it, and of an exec probe a
  shell line of its words joined by spaces (CMD-SHELL), so ["sh", "-c",
  SCRIPT] would lose SCRIPT's quoting: it becomes [SCRIPT], which that shell
  line runs as written. (readinessProbe: podman ignores it; kube.sh runs it.)
- PodDisruptionBudget: dropped (nothing evicts here).
The later of two objects of the same kind and name wins (the overlay's Secret
replaces deploy/k8s/secret.yaml's), as a second `kubectl apply` would.

usage: kube_to_podman.py --prefix P --out DIR [--publish DEPLOY/I/PORTNAME=HOSTPORT]... FILE...
Writes DIR/NN-DEPLOYMENT.yaml, DIR/P-SECRET.json and DIR/plan (one line per
Deployment: FILE ALIAS,ALIAS POD,POD), in the order to play them: the
Deployments no Service of another names first (Redis and the fakes), sluice last.
"""
import argparse
import base64
import copy
import json
import os
import sys

import yaml


def load(files):
    objs = {}
    for f in files:
        with open(f) as fh:
            for d in yaml.safe_load_all(fh):
                if d:
                    objs[(d["kind"], d["metadata"]["name"])] = d  # later wins
    return list(objs.values())


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--publish", action="append", default=[])
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    p = a.prefix
    objs = load(a.files)
    by_kind = lambda k: [o for o in objs if o["kind"] == k]
    known = {"Deployment", "Service", "Secret", "ConfigMap", "PersistentVolumeClaim", "PodDisruptionBudget"}
    for o in objs:
        if o["kind"] not in known:
            sys.exit("kube_to_podman: no rule for kind %s" % o["kind"])

    publish = {}
    for spec in a.publish:
        key, port = spec.split("=")
        publish[key] = int(port)

    for s in by_kind("Secret"):
        data = {k: v for k, v in (s.get("data") or {}).items()}
        for k, v in (s.get("stringData") or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        with open(os.path.join(a.out, "%s-%s.json" % (p, s["metadata"]["name"])), "w") as fh:
            json.dump(data, fh)

    configmaps = {c["metadata"]["name"]: c for c in by_kind("ConfigMap")}
    claims = {c["metadata"]["name"]: c for c in by_kind("PersistentVolumeClaim")}
    plan = []
    deployments = by_kind("Deployment")
    # sluice (whose pods need the others' names to resolve) last
    deployments.sort(key=lambda d: d["metadata"]["name"] == "sluice")
    for n, d in enumerate(deployments):
        name = d["metadata"]["name"]
        tmpl = d["spec"]["template"]
        labels = tmpl["metadata"].get("labels", {})
        aliases = [s["metadata"]["name"] for s in by_kind("Service") if matches(s["spec"].get("selector"), labels)]
        docs, pods, used_cm, used_pvc = [], [], set(), set()
        for i in range(d["spec"].get("replicas", 1)):
            spec = copy.deepcopy(tmpl["spec"])
            pod = "%s-%s-%d" % (p, name, i)
            for v in spec.get("volumes", []):
                if "emptyDir" in v:
                    old = v["name"]
                    v["name"] = "%s-%s" % (pod, old)
                    for c in spec["containers"]:
                        for m in c.get("volumeMounts", []):
                            if m["name"] == old:
                                m["name"] = v["name"]
                elif "configMap" in v:
                    used_cm.add(v["configMap"]["name"])
                    v["configMap"]["name"] = "%s-%s" % (p, v["configMap"]["name"])
                elif "persistentVolumeClaim" in v:
                    used_pvc.add(v["persistentVolumeClaim"]["claimName"])
                    v["persistentVolumeClaim"]["claimName"] = "%s-%s" % (p, v["persistentVolumeClaim"]["claimName"])
            for c in spec["containers"]:
                for e in c.get("env", []):
                    ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                    if ref:
                        ref["name"] = "%s-%s" % (p, ref["name"])
                live = (c.get("livenessProbe") or {}).get("exec")
                if live and live["command"][:2] == ["sh", "-c"] and len(live["command"]) == 3:
                    live["command"] = [live["command"][2]]
                named = {port["name"]: port["containerPort"] for port in c.get("ports", []) if "name" in port}
                for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                    for how in ("httpGet", "tcpSocket"):
                        at = (c.get(probe) or {}).get(how)
                        if at and at.get("port") in named:
                            at["port"] = named[at["port"]]
                kept = []
                for port in c.get("ports", []):
                    key = "%s/%d/%s" % (name, i, port.get("name", port["containerPort"]))
                    if key in publish:
                        port["hostPort"] = publish[key]
                        port["hostIP"] = "127.0.0.1"
                        kept.append(port)
                c["ports"] = kept
            pods.append(pod)
            docs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": pod, "labels": dict(labels)}, "spec": spec})
        for cm in sorted(used_cm):
            c = copy.deepcopy(configmaps[cm])
            c["metadata"]["name"] = "%s-%s" % (p, cm)
            docs.insert(0, c)
        for pvc in sorted(used_pvc):
            c = copy.deepcopy(claims[pvc])
            c["metadata"]["name"] = "%s-%s" % (p, pvc)
            docs.insert(0, c)
        fname = os.path.join(a.out, "%02d-%s.yaml" % (n, name))
        with open(fname, "w") as fh:
            yaml.safe_dump_all(docs, fh, sort_keys=False)
        plan.append("%s %s %s" % (fname, ",".join(aliases) or "-", ",".join(pods)))
    with open(os.path.join(a.out, "plan"), "w") as fh:
        fh.write("\n".join(plan) + "\n")


if __name__ == "__main__":
    main()
