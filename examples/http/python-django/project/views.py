from django.http import HttpRequest, HttpResponse

from throttlekit.django import ratelimit_exempt


@ratelimit_exempt
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def limited(request: HttpRequest) -> HttpResponse:  # THROTTLEKIT["RATE"] applies
    return HttpResponse("ok")
