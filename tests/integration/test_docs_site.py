"""The docs site as a reader meets it: built with `mkdocs build --strict`, served over HTTP, and every page opened
in real headless Chromium. A page fails when its main content is (near) empty, when a link to the site does not
reach a page the server serves (or names an id the target page lacks), or when it loads anything the server
did not serve: the site must render offline."""

from __future__ import annotations

import html.parser
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

from tests.integration.chromium import Chromium, Rendered, chromium_path

REPO = Path(__file__).resolve().parents[2]

MIN_BODY_WORDS = 5
"""Words a page's main content needs outside its headings to count as written."""

# The error page is a heading alone by design; its links are still checked.
BODY_EXEMPT = {"404.html"}

pytestmark = pytest.mark.skipif(chromium_path() is None, reason="no chromium on PATH (.ci/run installs it)")


class _SiteHandler(SimpleHTTPRequestHandler):
    """Serves the built files only: a folder without an index.html is a 404, not a listing, so a link to it fails."""

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(404)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(site: Path) -> Iterator[str]:
    """`site` on a free loopback port (listening before this yields); the base URL, ending in `/`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_SiteHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def page_urls(site: Path, base: str) -> dict[str, str]:
    """Every built page's URL (a folder's index.html as the folder), keyed by its file under `site`."""
    urls = {}
    for page in sorted(site.rglob("*.html")):
        name = page.relative_to(site).as_posix()
        urls[name] = base + (name.removesuffix("index.html") if page.name == "index.html" else name)
    return urls


class _Ids(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


class _Fetcher:
    """GETs on the served site, once per URL, past any proxy the environment names."""

    def __init__(self) -> None:
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._seen: dict[str, tuple[int, set[str]]] = {}

    def get(self, url: str) -> tuple[int, set[str]]:
        """The status and, for an HTML answer, the ids in it."""
        if url not in self._seen:
            try:
                with self._opener.open(url, timeout=10) as answer:
                    status, kind, body = answer.status, answer.headers.get_content_type(), answer.read()
            except urllib.error.HTTPError as error:
                status, kind, body = error.code, "", b""
            ids = _Ids()
            if kind == "text/html":
                ids.feed(body.decode(errors="replace"))
            self._seen[url] = (status, ids.ids)
        return self._seen[url]


def check_site(site: Path, browser: Chromium) -> list[str]:
    """Every problem a reader of `site` would meet, one line each, naming its page."""
    problems: list[str] = []
    with serve(site) as base:
        rendered = {name: browser.render(url) for name, url in page_urls(site, base).items()}
        by_url = {page.url: page for page in rendered.values()}
        fetcher = _Fetcher()
        for name, page in rendered.items():
            problems += [f"{name}: {problem}" for problem in _page_problems(name, page, base, by_url, fetcher)]
    return problems


def _page_problems(name: str, page: Rendered, base: str, by_url: dict[str, Rendered], fetcher: _Fetcher) -> list[str]:
    problems = [f"loaded {url} from outside the site" for url in page.requested
                if not url.startswith(base) and urlsplit(url).scheme not in ("data", "blob")]
    problems += [f"{_on_site(r.url, base)} answered {r.status}"
                 for r in page.responses if r.url.startswith(base) and r.status != 200]
    problems += [f"could not load {failure}" for failure in page.failed]
    if name not in BODY_EXEMPT:
        if not page.has_main:
            problems.append("has no main content (no article)")
        elif len(page.body_text.split()) < MIN_BODY_WORDS:
            problems.append(f"main content is (nearly) empty: {page.body_text!r}")
    for link in dict.fromkeys(page.links):
        if not link.startswith(base):
            continue  # another host, mailto: and the like: not this site's to answer for
        target, fragment = urldefrag(link)
        if target in by_url:
            status, ids = 200, by_url[target].ids
        else:
            status, ids = fetcher.get(target)
        if status != 200:
            problems.append(f"links to {_on_site(link, base)}, which answers {status}")
        elif fragment and unquote(fragment) not in ids:
            problems.append(f"links to {_on_site(link, base)}, but that page has no id {unquote(fragment)!r}")
    return problems


def _on_site(url: str, base: str) -> str:
    """A URL on the served site as its path from the site's root."""
    return url.removeprefix(base.rstrip("/"))


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    with Chromium.launch(tmp_path_factory.mktemp("chromium")) as chromium:
        yield chromium


def test_every_docs_page_renders_with_working_links(tmp_path: Path, browser: Chromium) -> None:
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=REPO, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=60,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert (site / "index.html").is_file() and (site / "reference" / "cli" / "index.html").is_file()
    problems = check_site(site, browser)
    assert not problems, "\n".join(problems)


def test_the_check_reports_a_broken_page(tmp_path: Path, browser: Chromium) -> None:
    """The same check, through the browser, on a tiny site with one sound page and one broken one."""
    site = tmp_path / "site"
    (site / "guide").mkdir(parents=True)
    (site / "empty").mkdir()
    (site / "index.html").write_text(
        '<html><body><article><h1 id="top">Home</h1><p>A page with enough words in it to count.</p>'
        '<a href="guide/">guide</a> <a href="#top">top</a> <a href="https://example.org/">elsewhere</a>'
        ' <a href="mailto:someone@example.org">mail</a></article></body></html>'
    )
    (site / "guide" / "index.html").write_text(
        '<html><body><article><h1 id="guide">Guide</h1>  </article>'
        '<a href="../missing/">missing</a> <a href="../#nowhere">anchor</a> <a href="../empty/">folder</a>'
        '<img src="../gone.png"></body></html>'
    )
    assert sorted(check_site(site, browser)) == sorted([
        "guide/index.html: main content is (nearly) empty: ''",
        "guide/index.html: links to /missing/, which answers 404",
        "guide/index.html: links to /#nowhere, but that page has no id 'nowhere'",
        "guide/index.html: links to /empty/, which answers 404",
        "guide/index.html: /gone.png answered 404",
    ])
