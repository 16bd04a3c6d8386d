"""The Workers page (operators, i.e. staff, only): every worker host of the
pool, its state, slots, running cells, tools and versions, and drain/resume
(benchapp.runs.workerpool)."""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.runs import workerpool


def staff_required(view):
    """Logged in and staff; anyone else is refused (403), never shown the pool."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("the Workers page is for operators (staff)")
        return view(request, *args, **kwargs)

    return wrapped


@staff_required
def worker_list(request):
    hosts = workerpool.overview()
    return render(
        request, "workers/list.html", {"hosts": hosts, "skew": any(h.version_skew for h in hosts)}
    )


def _host(host_id: str):
    host = workerpool.get_host(host_id)
    if host is None:
        raise Http404("no such worker host")
    return host


@staff_required
@require_POST
def worker_drain(request, host_id):
    host = _host(host_id)
    moved = workerpool.drain(host)
    messages.success(
        request,
        f"{host.hostname} is draining: its running cells finish, it takes no new ones"
        + (f" ({moved} waiting cell{'s' if moved != 1 else ''} sent elsewhere)." if moved else "."),
    )
    return redirect("worker_list")


@staff_required
@require_POST
def worker_resume(request, host_id):
    host = _host(host_id)
    workerpool.resume(host)
    messages.success(request, f"{host.hostname} takes cells again.")
    return redirect("worker_list")
