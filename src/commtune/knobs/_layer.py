"""The knobs as a run that selected a layer reads them (issue 95; the layer is read by
``service.read_layer``): those of a layer it does not use unavailable, each with its reason
(:func:`with_layer`), so no study searches them and ``--knob`` naming one is one line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from commtune.knobs._catalog import layer_places
from commtune.knobs._discovery import KnobStatus
from commtune.mpi import Installation, Layer


def with_layer(statuses: Mapping[str, KnobStatus], layer: Layer | None,
               installation: Installation) -> dict[str, KnobStatus]:  # fmt: skip
    """``statuses`` with every knob the run of ``layer`` does not read unavailable, its
    reason the layer's (``MPIVendor.unread``); the knobs of a layer the library names only
    (``MPIVendor.named_only``) in their presets and default space where the run selects
    that layer (``MPIVendor.layer_families``), and the component serving the calls in the
    default space where it is a knob (``MPIVendor.layer_knobs``: Open MPI's han)."""
    out = dict(statuses)
    if layer is None:
        return out
    impl = installation.impl
    for name, status in statuses.items():
        why = impl.unread(layer, name) if status.available else None
        if why is not None:
            out[name] = replace(status, available=False, reason=why)
    for family in impl.layer_families(layer):  # the layer it runs over: its knobs in place
        for name, (presets, default) in layer_places(installation.vendor.value, family).items():
            if name in out:
                knob = replace(out[name].knob, presets=presets, default_space=default)
                out[name] = replace(out[name], knob=knob)
    for name in impl.layer_knobs(layer):  # what serves the calls, raced
        if name in out and out[name].available:
            out[name] = replace(out[name], knob=replace(out[name].knob, default_space=True))
    return out
