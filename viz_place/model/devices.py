"""Device classes and clusters.

A :class:`DeviceClass` describes ``count`` identical devices; a
:class:`Cluster` is an ordered tuple of classes. Device *instances* are named
``"<class>:<index>"`` (``"fpga:0"``, ``"cpu:0"``).

The op latency of a node on a class is ``node.latency[cls.kind] / cls.speed``;
a node without a latency for that kind is *unsupported* there. Transfers paid by
a device cost ``node.transfer_cost * cls.link_factor`` when
``cls.pays_communication`` (accelerators); host-like classes (CPUs) pay none,
as in the paper.

>>> c = Cluster.paper(max_fpgas=2, max_cpus=1, max_size_per_fpga=100.0)
>>> c.device_names
('fpga:0', 'fpga:1', 'cpu:0')
>>> c.device_class_of("fpga:1").memory
100.0
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Mapping

from ..errors import DeviceError

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-. ]*$")


@dataclass(frozen=True)
class DeviceClass:
    """``count`` identical devices.

    Parameters
    ----------
    name : unique class name (letters, digits, ``_-. ``; not ending in ``:``).
    kind : which per-kind latency of the graph this class uses (``"cpu"``, ``"fpga"``...).
    count : number of devices (0 allowed: the class exists but offers none).
    memory : capacity in the graph's size unit (bytes), ``None`` = unlimited.
    speed : latencies of the kind are divided by this factor (> 0).
    pays_communication : accelerators pay transfers; host CPUs do not.
    link_factor : multiplies every transfer cost this class pays (>= 0).

    >>> DeviceClass("gpu", "fpga", count=2, speed=2.0).count
    2
    """

    name: str
    kind: str
    count: int = 1
    memory: float | None = None
    speed: float = 1.0
    pays_communication: bool = True
    link_factor: float = 1.0

    def __post_init__(self) -> None:
        where = f"device class {self.name!r}"
        named = self.name if isinstance(self.name, str) else None
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise DeviceError(f"{where}: field 'name' must start with a letter and use letters, digits, '_-. ' only",
                              field="name", device=named)
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise DeviceError(f"{where}: field 'kind' must be a non-empty string",
                              field="kind", device=named)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise DeviceError(f"{where}: field 'count' must be a whole number >= 0, got {self.count!r}",
                              field="count", device=named)
        if self.count > 4096:
            raise DeviceError(f"{where}: field 'count' is {self.count}; at most 4096 devices per class are supported",
                              field="count", device=named)
        if self.memory is not None:
            if not _is_number(self.memory) or math.isnan(self.memory) or self.memory < 0:
                raise DeviceError(f"{where}: field 'memory' must be a number >= 0 or null (unlimited), got {self.memory!r}",
                                  field="memory", device=named)
            if math.isinf(self.memory):
                object.__setattr__(self, "memory", None)
            else:
                object.__setattr__(self, "memory", float(self.memory))
        if not _is_number(self.speed) or not math.isfinite(self.speed) or self.speed <= 0:
            raise DeviceError(f"{where}: field 'speed' must be a finite number > 0, got {self.speed!r}",
                              field="speed", device=named)
        if not isinstance(self.pays_communication, bool):
            raise DeviceError(f"{where}: field 'pays_communication' must be true or false",
                              field="pays_communication", device=named)
        if not _is_number(self.link_factor) or not math.isfinite(self.link_factor) or self.link_factor < 0:
            raise DeviceError(f"{where}: field 'link_factor' must be a finite number >= 0, got {self.link_factor!r}",
                              field="link_factor", device=named)
        object.__setattr__(self, "speed", float(self.speed))
        object.__setattr__(self, "link_factor", float(self.link_factor))

    def instance_names(self) -> tuple[str, ...]:
        """Names of this class's devices, ``("<name>:0", ...)``."""
        return tuple(f"{self.name}:{i}" for i in range(self.count))

    def with_(self, **changes: Any) -> "DeviceClass":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "count": self.count, "memory": self.memory,
            "speed": self.speed, "pays_communication": self.pays_communication,
            "link_factor": self.link_factor,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DeviceClass":
        if not isinstance(data, Mapping):
            raise DeviceError(f"device class must be an object, got {type(data).__name__}")
        allowed = {"name", "kind", "count", "memory", "speed", "pays_communication", "link_factor"}
        unknown = set(data) - allowed
        name = data.get("name", "?")
        if unknown:
            raise DeviceError(f"device class {name!r}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}",
                              field=sorted(unknown)[0], device=name)
        for req in ("name", "kind"):
            if req not in data:
                raise DeviceError(f"device class {name!r}: missing field {req!r}", field=req, device=name)
        return cls(**dict(data))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass(frozen=True)
class Device:
    """One device instance: ``name`` is ``"<class>:<index>"``."""

    name: str
    cls: DeviceClass
    index: int


@dataclass(frozen=True)
class Cluster:
    """An ordered, immutable collection of device classes.

    >>> c = Cluster((DeviceClass("gpu", "fpga", 2, memory=8.0), DeviceClass("cpu", "cpu", 1, pays_communication=False)))
    >>> [d.name for d in c.devices]
    ['gpu:0', 'gpu:1', 'cpu:0']
    >>> c.with_class_count("gpu", 3).device_names
    ('gpu:0', 'gpu:1', 'gpu:2', 'cpu:0')
    """

    classes: tuple[DeviceClass, ...]

    def __post_init__(self) -> None:
        classes = tuple(self.classes)
        object.__setattr__(self, "classes", classes)
        seen: set[str] = set()
        for c in classes:
            if not isinstance(c, DeviceClass):
                raise DeviceError(f"cluster entries must be DeviceClass, got {type(c).__name__}")
            if c.name in seen:
                raise DeviceError(f"device class {c.name!r}: duplicate class name", field="name", device=c.name)
            seen.add(c.name)
        if not classes:
            raise DeviceError("cluster: at least one device class is required")
        if sum(c.count for c in classes) == 0:
            raise DeviceError("cluster: every device class has count 0; at least one device is required",
                              field="count")

    # --- construction -------------------------------------------------
    @classmethod
    def paper(cls, max_fpgas: int, max_cpus: int, max_size_per_fpga: float | None) -> "Cluster":
        """The paper's two classes: ``fpga`` (memory-limited, pays transfers) and ``cpu``."""
        return cls((
            DeviceClass("fpga", "fpga", int(max_fpgas), memory=max_size_per_fpga, pays_communication=True),
            DeviceClass("cpu", "cpu", int(max_cpus), memory=None, pays_communication=False),
        ))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Cluster":
        """From ``{"classes": [...]}`` or the paper's ``maxFPGAs/maxCPUs/maxSizePerFPGA``."""
        if not isinstance(data, Mapping):
            raise DeviceError(f"devices must be a JSON object, got {type(data).__name__}")
        if "classes" in data:
            if not isinstance(data["classes"], list):
                raise DeviceError("devices: field 'classes' must be a list", field="classes")
            return cls(tuple(DeviceClass.from_dict(c) for c in data["classes"]))
        keys = ("maxFPGAs", "maxCPUs", "maxSizePerFPGA")
        if all(k in data for k in keys):
            return cls.paper(data["maxFPGAs"], data["maxCPUs"], data["maxSizePerFPGA"])
        raise DeviceError("devices: expected field 'classes' or the paper's maxFPGAs/maxCPUs/maxSizePerFPGA",
                          field="classes")

    def to_dict(self) -> dict[str, Any]:
        return {"classes": [c.to_dict() for c in self.classes]}

    # --- queries -------------------------------------------------------
    @cached_property
    def devices(self) -> tuple[Device, ...]:
        return tuple(Device(f"{c.name}:{i}", c, i) for c in self.classes for i in range(c.count))

    @cached_property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.device_names)}

    def device_index(self, name: str) -> int:
        """Position of device ``name``; raises a clear error for unknown names."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise DeviceError(f"unknown device {name!r}; devices are {', '.join(self.device_names)}",
                              device=name) from None

    def has_device(self, name: str) -> bool:
        return name in self._index

    def device_class_of(self, name: str) -> DeviceClass:
        return self.devices[self.device_index(name)].cls

    def class_named(self, name: str) -> DeviceClass:
        for c in self.classes:
            if c.name == name:
                return c
        raise DeviceError(f"unknown device class {name!r}; classes are {', '.join(c.name for c in self.classes)}",
                          device=name)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.kind for c in self.classes))

    # --- edits (return new clusters) -------------------------------------
    def with_class(self, new: DeviceClass, *, replace_name: str | None = None) -> "Cluster":
        """Replace class ``replace_name`` (default ``new.name``) or append ``new``."""
        target = replace_name or new.name
        out, done = [], False
        for c in self.classes:
            if c.name == target:
                out.append(new)
                done = True
            else:
                out.append(c)
        if not done:
            out.append(new)
        return Cluster(tuple(out))

    def with_class_count(self, name: str, count: int) -> "Cluster":
        return self.with_class(self.class_named(name).with_(count=count))

    def without_class(self, name: str) -> "Cluster":
        self.class_named(name)
        return Cluster(tuple(c for c in self.classes if c.name != name))

    def summary(self) -> list[dict[str, Any]]:
        """Classes with counts, as the CLI's ``info`` prints them."""
        return [c.to_dict() for c in self.classes]
