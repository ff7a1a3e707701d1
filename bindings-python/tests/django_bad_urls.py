"""A URLconf whose view has a bad @ratelimit: the project must refuse to start
(tests/test_http_django.py)."""

from django.urls import path

from django_apps import ok
from throttlekit.django import ratelimit

urlpatterns = [path("bad", ratelimit("5/fortnight")(ok))]
