#!/usr/bin/env python3
"""browser_check.py BROWSER PAGE.html SCREENSHOT.png [--sort]

Opens PAGE.html in a real headless Chromium (chromium-headless-shell or
chromium) over the DevTools protocol on a pipe (--remote-debugging-pipe:
no port, no network), waits for the load event and then:

  - fails on every console error and warning, uncaught exception and
    browser log entry of level error (a failed load, a blocked request);
  - fails on an <img> that did not decode (naturalWidth 0) and on any
    resource the page fetched (a self-contained page fetches nothing);
  - with --sort: clicks the first numeric column header of every sortable
    table and checks the rows come out ascending, then descending, by
    their data-v values;
  - at a phone's width (390 px CSS): fails when the page is wider than
    the screen (a horizontal scroll), naming the widest elements;
  - writes a PNG screenshot of the page's top (1280 px wide, the findings
    and first figures) to SCREENSHOT.png, and of the whole page (at most
    16000 px tall) next to it as *-full.png.

Prints one line per problem and a final summary; exit 0 when the page is
clean, 1 when not, 2 when the browser could not be driven.  Standard
library only.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

WIDTH, TOP_HEIGHT, MAX_HEIGHT = 1280, 1600, 16000
PHONE = 390            # CSS px: a phone held upright (iPhone 12-15)
TIMEOUT = 60.0


class Browser:
    def __init__(self, exe, profile):
        a_r, a_w = os.pipe()   # we write commands -> browser reads fd 3
        b_r, b_w = os.pipe()   # browser writes fd 4 -> we read

        def child():
            x, y = os.dup(a_r), os.dup(b_w)
            os.dup2(x, 3)
            os.dup2(y, 4)

        self.log = open(os.path.join(profile, "browser.log"), "wb")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--disable-dev-shm-usage", "--hide-scrollbars",
             "--user-data-dir=" + profile, "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            pass_fds=(3, 4), preexec_fn=child)
        os.close(a_r)
        os.close(b_w)
        self.w, self.r = a_w, b_r
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("no answer from the browser")
            import select
            rd, _, _ = select.select([self.r], [], [], 0.5)
            if rd:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise EOFError("the browser closed its pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        deadline = time.time() + TIMEOUT
        while True:
            r = self._read(deadline)
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})
            self.events.append(r)

    def wait_event(self, method, deadline):
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


IMAGES_JS = """JSON.stringify({
  images: Array.from(document.images).map(function (i) {
    return {alt: i.alt, ok: i.complete && i.naturalWidth > 0,
            w: i.naturalWidth};
  }),
  fetched: performance.getEntriesByType('resource').map(function (r) {
    return r.name.slice(0, 200);
  }),
  height: document.documentElement.scrollHeight
})"""

SORT_JS = """(function () {
  var out = [];
  document.querySelectorAll('table.sort').forEach(function (t, ti) {
    var h = t.querySelector('thead th.n');
    if (!h || t.tBodies[0].rows.length < 2) return;
    var i = h.cellIndex;
    function vals() {
      return Array.from(t.tBodies[0].rows).map(function (r) {
        var v = r.cells[i] && r.cells[i].getAttribute('data-v');
        return v === null ? null : parseFloat(v);
      }).filter(function (v) { return v !== null; });
    }
    function sorted(v, up) {
      for (var k = 1; k < v.length; k++)
        if (up ? v[k - 1] > v[k] : v[k - 1] < v[k]) return false;
      return true;
    }
    h.click();
    var a = vals(), upok = sorted(a, true) &&
        h.getAttribute('aria-sort') === 'ascending';
    h.click();
    var d = vals(), downok = sorted(d, false) &&
        h.getAttribute('aria-sort') === 'descending';
    out.push({table: t.closest('body') && (t.previousElementSibling ?
              t.previousElementSibling.textContent.slice(0, 60) : ti),
              column: h.textContent, ascending: upok, descending: downok});
  });
  return JSON.stringify(out);
})()"""


# the layout viewport (clientWidth): a phone zooms out to show a page that
# overflows, which widens innerWidth with it
OVERFLOW_JS = """(function () {
 var w = document.documentElement.clientWidth;
 return JSON.stringify({
  page: document.documentElement.scrollWidth, screen: w,
  wide: Array.from(document.body.querySelectorAll('*')).filter(function (e) {
    var r = e.getBoundingClientRect();
    return r.right > w + 1;
  }).slice(0, 5).map(function (e) {
    return e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') +
           ' ' + Math.round(e.getBoundingClientRect().right) + ' px';
  })
 });
})()"""


def phone_overflow(b, sid):
    """The page at PHONE px wide: problems when it scrolls sideways."""
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": PHONE, "height": 844, "deviceScaleFactor": 1,
            "mobile": True}, session=sid)
    b.call("Page.reload", session=sid)
    b.wait_event("Page.loadEventFired", time.time() + TIMEOUT)
    r = b.call("Runtime.evaluate", {"expression": OVERFLOW_JS,
                                    "returnByValue": True}, session=sid)
    o = json.loads(r["result"]["value"])
    if o["page"] > o["screen"]:
        return ["at %d px the page is %d px wide (scrolls sideways): %s"
                % (o["screen"], o["page"], "; ".join(o["wide"]))]
    return []


def main(argv):
    sort = "--sort" in argv
    args = [a for a in argv if a != "--sort"]
    if len(args) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    exe, page, shot = args
    url = "file://" + os.path.abspath(page)
    problems = []
    with tempfile.TemporaryDirectory(prefix="lbs-browser.") as prof:
        try:
            b = Browser(exe, prof)
        except OSError as e:
            print("cannot start %s: %s" % (exe, e))
            return 2
        try:
            t = b.call("Target.createTarget", {"url": "about:blank"})
            s = b.call("Target.attachToTarget",
                       {"targetId": t["targetId"], "flatten": True})
            sid = s["sessionId"]
            for dom in ("Page", "Runtime", "Log"):
                b.call(dom + ".enable", session=sid)
            b.call("Emulation.setDeviceMetricsOverride",
                   {"width": WIDTH, "height": TOP_HEIGHT,
                    "deviceScaleFactor": 1, "mobile": False}, session=sid)
            nav = b.call("Page.navigate", {"url": url}, session=sid)
            if nav.get("errorText"):
                problems.append("navigation failed: " + nav["errorText"])
            b.wait_event("Page.loadEventFired", time.time() + TIMEOUT)
            r = b.call("Runtime.evaluate", {"expression": IMAGES_JS,
                                            "returnByValue": True},
                       session=sid)
            info = json.loads(r["result"]["value"])
            for im in info["images"]:
                if not im["ok"]:
                    problems.append("image not shown: %s" % im["alt"])
            for f in info["fetched"]:
                problems.append("the page fetched %s (not self-contained)"
                                % f)
            if sort:
                r = b.call("Runtime.evaluate", {"expression": SORT_JS,
                                                "returnByValue": True},
                           session=sid)
                res = json.loads(r["result"]["value"])
                if not res:
                    problems.append("no sortable table with a numeric "
                                    "column")
                for x in res:
                    if not (x["ascending"] and x["descending"]):
                        problems.append("sorting %s by '%s' failed: %s"
                                        % (x["table"], x["column"], x))
                # back to the page as written for the screenshots
                b.call("Page.reload", session=sid)
                b.wait_event("Page.loadEventFired", time.time() + TIMEOUT)
            png = b.call("Page.captureScreenshot", {"format": "png"},
                         session=sid)
            with open(shot, "wb") as f:
                f.write(base64.b64decode(png["data"]))
            h = min(int(info["height"]), MAX_HEIGHT)
            png = b.call("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": WIDTH, "height": h,
                         "scale": 1}}, session=sid)
            full = shot[:-4] + "-full.png" if shot.endswith(".png") \
                else shot + "-full.png"
            with open(full, "wb") as f:
                f.write(base64.b64decode(png["data"]))
            problems += phone_overflow(b, sid)
            # everything the page said while loading and sorting
            for e in b.events:
                m, p = e.get("method"), e.get("params", {})
                if m == "Runtime.consoleAPICalled" and \
                        p.get("type") in ("error", "warning", "assert"):
                    text = " ".join(str(a.get("value", a.get("description",
                                                             "")))
                                    for a in p.get("args", []))
                    problems.append("console %s: %s" % (p["type"], text))
                elif m == "Runtime.exceptionThrown":
                    d = p.get("exceptionDetails", {})
                    problems.append("uncaught exception: %s" % d.get(
                        "exception", {}).get("description", d.get("text")))
                elif m == "Log.entryAdded" and \
                        p.get("entry", {}).get("level") == "error":
                    problems.append("browser log error: %s" %
                                    p["entry"].get("text"))
        except (RuntimeError, TimeoutError, EOFError, KeyError,
                ValueError) as e:
            print("could not drive the browser: %s" % e)
            b.close()
            try:
                sys.stdout.write(open(os.path.join(prof, "browser.log"),
                                      errors="replace").read()[-2000:])
            except OSError:
                pass
            return 2
        b.close()
    for p in problems:
        print(p)
    print("%s: %d images, %d problems%s; screenshot %s" % (
        page, len(info["images"]), len(problems),
        ", sorting checked" if sort else "", shot))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
