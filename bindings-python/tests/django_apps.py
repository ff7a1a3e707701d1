"""Django projects for the tests, served for real (werkzeug's WSGI server, httpx over TCP).

Django's settings are configured once per process (here, unless something configured them
first); each test then sets ``THROTTLEKIT`` with ``override_settings``, defines its views under
it (``@ratelimit`` reads ``THROTTLEKIT`` when it is applied) and serves them with a fresh
``WSGIHandler``, which builds the middleware as a deployment's ``wsgi.py`` does.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import django
import httpx
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse
from django.test.utils import override_settings

from servers import serve

if not settings.configured:
    settings.configure(SECRET_KEY="tests", ALLOWED_HOSTS=["*"], DEBUG=False, ROOT_URLCONF="django_apps",
                       INSTALLED_APPS=[], MIDDLEWARE=[], USE_TZ=True)
    django.setup()

urlpatterns: list[Any] = []  # the default ROOT_URLCONF: no views
MIDDLEWARE = ["django_apps.FakeUser", "throttlekit.django.RateLimitMiddleware"]
_names = itertools.count()


class FakeUser:
    """Stands in for django.contrib.auth's middleware: ``X-Test-User: 42`` signs in user 42."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        pk = request.headers.get("X-Test-User")
        request.user = types.SimpleNamespace(pk=pk, is_authenticated=pk is not None)  # type: ignore[attr-defined]
        return self.get_response(request)


def ok(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return HttpResponse("ok")


@contextmanager
def throttlekit(**conf: Any) -> Iterator[None]:
    """``THROTTLEKIT = conf`` (and the test middleware) while the block runs."""
    with override_settings(THROTTLEKIT=conf, MIDDLEWARE=MIDDLEWARE, ROOT_URLCONF="django_apps"):
        yield


@contextmanager
def served(patterns: list[Any], kind: str = "wsgi") -> Iterator[httpx.Client]:
    """The project with URL patterns ``patterns``, built now and served as a WSGI application
    (werkzeug) or an ASGI one (uvicorn); yields a client."""
    urls = types.ModuleType(f"django_test_urls_{next(_names)}")
    urls.urlpatterns = patterns  # type: ignore[attr-defined]
    with override_settings(ROOT_URLCONF=urls):
        with serve(kind, WSGIHandler() if kind == "wsgi" else ASGIHandler()) as client:
            yield client


def build() -> WSGIHandler:
    """A WSGI application as ``get_wsgi_application()`` builds it (the middleware included)."""
    return WSGIHandler()
