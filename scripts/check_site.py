#!/usr/bin/env python3
"""Checks the built tutorial site the way a reader meets it: offline, page by page, in Chromium.

    /usr/bin/python3 scripts/check_site.py site [--screenshots DIR]

1. Links, read from every HTML file: every local link, image, script and stylesheet exists, every
   #anchor exists in its page, every SVG figure is well-formed XML, and nothing the page LOADS
   comes from the network (links the reader may click to, such as the paper, are allowed).
2. Every page opened in headless Chromium from file:// (Debian's chromium, driven through the
   DevTools protocol over a pipe: no extra Python package): no console error or warning, no
   uncaught exception, no failed load, every image decoded (naturalWidth > 0), every formula
   rendered by KaTeX (no .arithmatex element without a .katex inside, no .katex-error). KaTeX runs
   with throwOnError (docs/javascripts/katex-init.js), so a formula it cannot parse, an undefined
   command included, stays unrendered and logs a console error: both are reported.
3. With --screenshots, a full-page PNG of each page, to look at.
Exits 1 with one line per problem.
"""
import argparse
import base64
import fcntl
import html.parser
import json
import os
import pathlib
import select
import subprocess
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ET


class PageLinks(html.parser.HTMLParser):
    """Ids, links (a href) and loaded resources (img/script src, link href) of one page."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.resources = set(), [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag in ("img", "script", "source", "iframe") and a.get("src"):
            self.resources.append(a["src"])
        elif tag == "link" and a.get("href") and a.get("rel") != ["canonical"]:
            rel = a.get("rel") or ""
            if "canonical" not in rel:
                self.resources.append(a["href"])


def parse(page):
    p = PageLinks()
    p.feed(page.read_text(encoding="utf-8"))
    return p


def check_links(site):
    problems, parsed = [], {}
    # 404.html is for web servers, which serve it at any depth: its links are absolute on purpose.
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    for page in pages:
        parsed[page] = parse(page)
    for page in pages:
        rel = page.relative_to(site)
        info = parsed[page]
        for kind, targets in (("link", info.links), ("resource", info.resources)):
            for target in targets:
                url = urllib.parse.urlsplit(target)
                if url.scheme in ("http", "https", "mailto") or target.startswith("//"):
                    if kind == "resource":
                        problems.append(f"{rel}: loads {target} from the network")
                    continue
                if url.scheme:
                    problems.append(f"{rel}: unexpected URL scheme in {target}")
                    continue
                path = urllib.parse.unquote(url.path)
                dest = page if not path else (page.parent / path).resolve()
                if dest.is_dir():
                    dest = dest / "index.html"
                if not dest.exists():
                    problems.append(f"{rel}: broken {kind} {target}")
                    continue
                if url.fragment and dest.suffix == ".html":
                    ids = parsed[dest].ids if dest in parsed else parse(dest).ids
                    if url.fragment not in ids:
                        problems.append(f"{rel}: {target}: no anchor #{url.fragment}")
    for svg in sorted(site.rglob("*.svg")):
        if ".icons" in svg.parts:
            continue
        try:
            ET.parse(svg)
        except ET.ParseError as e:
            problems.append(f"{svg.relative_to(site)}: not well-formed SVG ({e})")
    return pages, problems


class Chromium:
    """Headless Chromium driven through the DevTools protocol on fds 3 and 4 (a pipe)."""

    def __init__(self, width=1280, height=900):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # Chromium reads commands on fd 3 and writes replies on fd 4
            r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)  # out of the way of 3 and 4 first
            w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.profile = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"sg-docs-chromium-{os.getpid()}"
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--hide-scrollbars", "--mute-audio", "--allow-file-access-from-files",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=child_fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read(self, timeout):
        """One message from Chromium, or None after `timeout` seconds."""
        deadline = time.time() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.time()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                return None
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium exited")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=False, timeout=30, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            reply = self._read(deadline - time.time())
            if reply is None:
                break
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)
        raise RuntimeError(f"{method}: no answer from chromium in {timeout} s")

    def wait_for(self, event, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, e in enumerate(self.events):
                if e["method"] == event:
                    del self.events[i]
                    return e
            reply = self._read(deadline - time.time())
            if reply is not None and "method" in reply:
                self.events.append(reply)
        raise RuntimeError(f"no {event} in {timeout} s")

    def drain(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            reply = self._read(deadline - time.time())
            if reply is not None and "method" in reply:
                self.events.append(reply)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        subprocess.run(["rm", "-rf", str(self.profile)])


# What each page reports about itself once loaded and its scripts have run.
PAGE_STATE = """(() => {
  const math = [...document.querySelectorAll('.arithmatex')];
  return JSON.stringify({
    title: document.title,
    formulas: math.length,
    unrendered: math.filter(m => !m.querySelector('.katex')).map(m => m.textContent.slice(0, 60)),
    katex_errors: [...document.querySelectorAll('.katex-error')].map(e => e.textContent.slice(0, 60)),
    broken_images: [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
                                       .map(i => i.getAttribute('src')),
    images: document.images.length,
    height: Math.ceil(document.documentElement.scrollHeight),
  });
})()"""


def problems_in_events(events, rel):
    problems = []
    for e in events:
        method, p = e["method"], e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            problems.append(f"{rel}: console {p['type']}: {text[:200]}")
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            text = d.get("exception", {}).get("description") or d.get("text", "")
            problems.append(f"{rel}: uncaught exception: {text[:200]}")
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            entry = p["entry"]
            problems.append(f"{rel}: {entry['level']}: {entry.get('text', '')[:200]} {entry.get('url', '')}")
        elif method == "Network.loadingFailed" and not p.get("canceled"):
            problems.append(f"{rel}: failed to load a resource: {p.get('errorText')}")
    return problems


def check_in_browser(site, pages, screenshots):
    problems, formulas, images = [], 0, 0
    browser = Chromium()
    try:
        for page in pages:
            rel = page.relative_to(site)
            browser.events.clear()
            browser.call("Page.navigate", session=True, url=page.resolve().as_uri())
            browser.wait_for("Page.loadEventFired")
            browser.drain(0.3)  # let the KaTeX script and late console messages arrive
            state = json.loads(browser.call("Runtime.evaluate", session=True,
                                            expression=PAGE_STATE, returnByValue=True)["result"]["value"])
            problems += problems_in_events(browser.events, rel)
            formulas += state["formulas"]
            images += state["images"]
            for text in state["unrendered"]:
                problems.append(f"{rel}: formula not rendered: {text}")
            for text in state["katex_errors"]:
                problems.append(f"{rel}: KaTeX error: {text}")
            for src in state["broken_images"]:
                problems.append(f"{rel}: image not displayed: {src}")
            if screenshots:  # the whole page, in tiles of at most 8000 px (a GPU texture limit)
                name = str(rel).replace("/", "_").replace(".html", "")
                tile = 8000
                for part, top in enumerate(range(0, state["height"], tile)):
                    shot = browser.call("Page.captureScreenshot", session=True, format="png",
                                        captureBeyondViewport=True,
                                        clip={"x": 0, "y": top, "width": 1280, "scale": 1,
                                              "height": min(tile, state["height"] - top)})
                    suffix = "" if state["height"] <= tile else f"_{part + 1}"
                    (screenshots / f"{name}{suffix}.png").write_bytes(base64.b64decode(shot["data"]))
    finally:
        browser.close()
    return problems, formulas, images


def main():
    parser = argparse.ArgumentParser(description="check the built tutorial site")
    parser.add_argument("site", type=pathlib.Path)
    parser.add_argument("--screenshots", type=pathlib.Path, help="write a PNG of every page here")
    args = parser.parse_args()
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        print(f"check_site: {site}/index.html is missing; build the site first", file=sys.stderr)
        return 1
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    pages, problems = check_links(site)
    browser_problems, formulas, images = check_in_browser(site, pages, args.screenshots)
    problems += browser_problems
    for p in problems:
        print(f"check_site: {p}", file=sys.stderr)
    if problems:
        print(f"check_site: {len(problems)} problems", file=sys.stderr)
        return 1
    print(f"check_site: {len(pages)} pages opened in Chromium: no broken links or anchors, no "
          f"console errors, {images} images displayed, {formulas} formulas rendered by KaTeX")
    return 0


if __name__ == "__main__":
    sys.exit(main())
