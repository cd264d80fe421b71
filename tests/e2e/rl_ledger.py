#!/usr/bin/env python3
"""Load driver of tests/e2e/serve_rl_ledger.sh (not a test by itself).

  rl_ledger.py drive URLFILE JOB OUTDIR PUSHERS BATCH
      Rollout workers (PUSHERS threads) push trajectories, keeping about 6
      batches (BATCH each) queued, to JOB's RL run
      while a trainer takes steps, against the daemon whose URL is the
      content of URLFILE (re-read on every attempt: the test restarts the
      daemon on another port). Every request is retried, the same, until it
      is answered (connection refused, reset, timeout, 503 are not answers):
      so an answer lost in a crash is asked for again. Pushers also re-send
      batches they had acknowledged (each must come back as duplicates) and
      reuse an id with another version (a conflict). OUTDIR/progress is
      rewritten as the run goes ("steps N pushed M"); the run ends when
      OUTDIR/stop exists, with OUTDIR/result.json: every trajectory sent with
      its last answer, every step's batch as answered, the violations seen.

  rl_ledger.py check OUTDIR DB MAX_STALENESS BATCH
      Compare result.json with the database (sqlite3, daemon stopped): prints
      the violations, exit 1 if any.
"""
import json
import os
import random
import sqlite3
import sys
import threading
import time
import urllib.error
import urllib.request

NOT_ANSWERS = (503,)


class Driver:
    def __init__(self, urlfile, job, outdir, pushers, batch):
        self.urlfile, self.job, self.outdir, self.pushers = urlfile, job, outdir, pushers
        self.batch = batch
        self.depth, self.depth_at = 0, 0.0
        self.steps_lost = 0    # steps whose first answer was lost (a crash after the commit)
        self.lock = threading.Lock()
        self.items = {}        # id -> {"version", "status" (last answer), "acked"}
        self.batches = {}      # step -> [ids] as answered
        self.step = 0          # trainer steps acknowledged
        self.dups_seen = 0
        self.conflicts_seen = 0
        self.retries = 0
        self.violations = []
        self.stop = threading.Event()

    def url(self):
        with open(self.urlfile) as f:
            return f.read().strip()

    def call(self, method, path, body):
        """Answer (status, json) of a request, retried until answered."""
        data = json.dumps(body).encode() if body is not None else None
        while True:
            base = self.url()
            if not base.startswith("http://"):
                time.sleep(0.02)   # being replaced
                continue
            req = urllib.request.Request(base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, json.loads(r.read() or b"null")
            except urllib.error.HTTPError as e:
                if e.code not in NOT_ANSWERS:
                    return e.code, json.loads(e.read() or b"null")
            except (OSError, ValueError):
                pass  # refused, reset, timed out, a half answer: not an answer
            with self.lock:
                self.retries += 1
            time.sleep(0.02)

    def violation(self, msg):
        with self.lock:
            self.violations.append(msg)

    def push(self, batch):
        """Push batch (a list of {"trajectory_id", "policy_version", ...}); the
        per-trajectory results, in order."""
        st, ans = self.call("POST", "/v1/rl/%s/trajectories" % self.job, {"trajectories": batch})
        if st != 200 or len(ans.get("results", [])) != len(batch):
            self.violation("push answered %s: %s" % (st, json.dumps(ans)[:300]))
            return None
        return ans["results"]

    def queued(self):
        """The run's fresh queue depth, asked at most every 50 ms."""
        with self.lock:
            if time.monotonic() - self.depth_at < 0.05:
                return self.depth
        st, ans = self.call("GET", "/v1/rl/%s" % self.job, None)
        with self.lock:
            self.depth_at = time.monotonic()
            self.depth = ans.get("queue_depth", 0) if st == 200 else 0
            return self.depth

    def pusher(self, w):
        rng = random.Random(w)
        n, sent = 0, []
        while not self.stop.is_set():
            if self.queued() > 6 * self.batch:
                time.sleep(0.01)   # back-pressure: the trainer has enough queued
                continue
            r = rng.random()
            if sent and r < 0.08:   # re-send an acknowledged batch: all duplicates
                again = rng.choice(sent)
                res = self.push(again)
                for t, x in zip(again, res or []):
                    if x["status"] != "duplicate":
                        self.violation("re-sent %s answered %s" % (t["trajectory_id"], x["status"]))
                    else:
                        with self.lock:
                            self.dups_seen += 1
                continue
            if sent and r < 0.10:   # an acknowledged id with another version: a conflict
                t = dict(rng.choice(sent)[0])
                t["policy_version"] += 1
                res = self.push([t])
                if res and res[0]["status"] != "conflict":
                    self.violation("id %s reused with another version answered %s"
                                   % (t["trajectory_id"], res[0]["status"]))
                elif res:
                    with self.lock:
                        self.conflicts_seen += 1
                continue
            with self.lock:
                known = self.step
            batch = []
            for _ in range(rng.randint(1, 5)):
                n += 1
                lag = rng.choice([0, 0, 0, 0, 1, 1, 2, 3])
                batch.append({"trajectory_id": "w%d-%d" % (w, n),
                              "policy_version": max(0, known - lag), "reward": rng.random()})
            with self.lock:
                for t in batch:
                    self.items[t["trajectory_id"]] = {"version": t["policy_version"],
                                                      "status": None, "acked": False}
            res = self.push(batch)
            if res is None:
                continue
            acked = []
            with self.lock:
                for t, x in zip(batch, res):
                    it = self.items[t["trajectory_id"]]
                    it["status"] = x["status"]
                    it["acked"] = x["status"] in ("accepted", "duplicate")
                    if it["acked"]:
                        acked.append(t)
            if acked:
                sent.append(acked)

    def trainer(self):
        while not self.stop.is_set():
            k = self.step + 1
            st, ans = self.call("POST", "/v1/rl/%s/step" % self.job, {"step": k})
            if st == 409:
                time.sleep(0.01)   # not enough fresh trajectories yet
                continue
            if st != 200 or ans.get("step") != k:
                self.violation("step %d answered %s: %s" % (k, st, json.dumps(ans)[:300]))
                time.sleep(0.05)
                continue
            ids = [t["trajectory_id"] for t in ans["trajectories"]]
            with self.lock:
                self.batches[k] = ids
                self.steps_lost += bool(ans.get("duplicate"))  # taken, its answer lost
                self.step = k
            # now and then a retry of the step just taken: the same batch
            if k % 7 == 0:
                st2, again = self.call("POST", "/v1/rl/%s/step" % self.job, {"step": k})
                if st2 != 200 or not again.get("duplicate") or \
                        [t["trajectory_id"] for t in again["trajectories"]] != ids:
                    self.violation("retry of step %d answered %s: %s" % (k, st2, json.dumps(again)[:300]))

    def progress(self):
        while not os.path.exists(os.path.join(self.outdir, "stop")):
            with self.lock:
                acked = sum(1 for x in self.items.values() if x["acked"])
                line = "steps %d pushed %d\n" % (self.step, acked)
            tmp = os.path.join(self.outdir, "progress.tmp")
            with open(tmp, "w") as f:
                f.write(line)
            os.replace(tmp, os.path.join(self.outdir, "progress"))
            time.sleep(0.1)
        self.stop.set()

    def run(self):
        threads = [threading.Thread(target=self.pusher, args=(w,)) for w in range(self.pushers)]
        threads.append(threading.Thread(target=self.trainer))
        for t in threads:
            t.start()
        self.progress()
        for t in threads:
            t.join()
        out = {"items": self.items, "batches": self.batches, "step": self.step,
               "dups_seen": self.dups_seen, "conflicts_seen": self.conflicts_seen,
               "retries": self.retries, "steps_lost": self.steps_lost,
               "violations": self.violations}
        with open(os.path.join(self.outdir, "result.json"), "w") as f:
            json.dump(out, f)


def check(outdir, db, max_staleness, batch_size):
    res = json.load(open(os.path.join(outdir, "result.json")))
    bad = list(res["violations"])
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT traj_id, policy_version, state, step, accepted_step FROM rl_trajectories")}
    n_ids = con.execute("SELECT count(*), count(DISTINCT traj_id) FROM rl_trajectories").fetchone()
    run = con.execute("SELECT step, policy_version, accepted, consumed, duplicates, stale_rejected, "
                      "stale_dropped FROM rl_runs").fetchone()
    if n_ids[0] != n_ids[1]:
        bad.append("a trajectory id is stored twice (%d rows, %d ids)" % n_ids)
    items = res["items"]
    acked = {i for i, x in items.items() if x["acked"]}
    for i, x in items.items():
        if x["status"] is None:
            bad.append("%s: never answered" % i)
        elif x["acked"] and i not in rows:
            bad.append("%s: acknowledged (%s) but not stored" % (i, x["status"]))
        elif not x["acked"] and i in rows:
            bad.append("%s: refused (%s) but stored" % (i, x["status"]))
        elif x["acked"] and rows[i][0] != x["version"]:
            bad.append("%s: stored with version %d, pushed %d" % (i, rows[i][0], x["version"]))
    for i in rows:
        if i not in items:
            bad.append("%s: stored, never pushed" % i)
    # consumed: exactly the batches the trainer was answered, each once
    seen = {}
    for k, ids in res["batches"].items():
        if len(ids) != batch_size:
            bad.append("step %s: a batch of %d" % (k, len(ids)))
        for i in ids:
            if i in seen:
                bad.append("%s consumed by steps %s and %s" % (i, seen[i], k))
            seen[i] = int(k)
    consumed = {i: r[2] for i, r in rows.items() if r[1] == "consumed"}
    if consumed != seen:
        extra = set(consumed) ^ set(seen)
        bad.append("consumed rows and answered batches differ: %s" % sorted(extra)[:10])
    if run[0] != res["step"] or run[1] != res["step"]:
        bad.append("trainer step %d (version %d), the last acknowledged %d" % (run[0], run[1], res["step"]))
    if sorted(int(k) for k in res["batches"]) != list(range(1, res["step"] + 1)):
        bad.append("the answered steps are not 1..%d" % res["step"])
    for i, (v, state, step, acc) in rows.items():
        if acc - v > max_staleness:
            bad.append("%s: accepted at version %d with version %d" % (i, acc, v))
        if state == "consumed" and step - 1 - v > max_staleness:
            bad.append("%s: consumed at step %d with version %d" % (i, step, v))
    if run[2] != len(rows) or run[3] != len(consumed):
        bad.append("counters accepted %d consumed %d, rows %d consumed %d"
                   % (run[2], run[3], len(rows), len(consumed)))
    if run[4] < res["dups_seen"]:
        bad.append("duplicates counted %d < answered %d" % (run[4], res["dups_seen"]))
    stale = sum(1 for x in items.values() if x["status"] == "stale")
    # pushed once, answered "duplicate": the first attempt committed, its answer was lost
    lost = sum(1 for x in items.values() if x["status"] == "duplicate")
    print("rl ledger: %d pushed, %d acknowledged (%d stored), %d refused stale (counted %d), "
          "%d dropped stale, %d duplicates answered (counted %d), %d conflicts, %d steps, "
          "%d consumed, %d retries; answers lost in a crash and recovered by a retry: %d "
          "trajectories, %d steps"
          % (len(items), len(acked), len(rows), stale, run[5], run[6], res["dups_seen"], run[4],
             res["conflicts_seen"], res["step"], len(consumed), res["retries"], lost,
             res["steps_lost"]), file=sys.stderr)
    for b in bad[:30]:
        print("violation: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "drive":
        Driver(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])).run()
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
