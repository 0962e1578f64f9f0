"""Bottleneck configuration as data (a TOML table, e.g. a scenario's [switch] part).

```toml
[link]
rate_bps = 2e6          # bottleneck rate
bucket_bytes = 1514     # drain shaper's burst (tbf burst)
telemetry = "all"       # records to the monitor port: "all", "datagrams" (the audio's: UDP only) or "off"
[buffer]
packets = 48            # or: bytes = 72000
[aqm]
name = "red"            # fifo | red | codel | pie | iwa
ecn = false
[aqm.red]               # the knobs of the chosen AQM (others may be given too)
w_q = 0.002
max_p = 0.1
th_min = 5
th_max = 20
[aqm.iwa]               # IWA (refmodel.params.iwa_params; with `tune`, target_s is the controller's)
budget_s = 0.040        # the audio's jitter budget: the target at install, and what `tune` tunes it for
target_s = 0.0279       # queue room for starting flows (default: the jitter budget less a margin)
mtu_bytes = 1514        # full-size frame: the window floor is one MSS = mtu_bytes - 54
hold_s = 1.0            # the reserve is forgotten this long after the last SYN-ACK
age_s = 10.0            # a flow slot is free this long after its SYN-ACK (>= hold_s)
```

The link rate is given once ([link]): every rate-derived integer (IWA's
payload conversions, RED's thresholds in ns, ...) comes from it.

Many access links (issue 12): the tables above configure link 0 and every
link without parameters of its own. ``[links.N]`` gives link N its clients
(the IPv4 addresses ``link_of`` maps to it) and, in its own ``[links.N.link]``,
``[links.N.buffer]`` and ``[links.N.aqm]``, whatever differs; a table it leaves
out is the top level's, whole:

```toml
[links.1]
clients = ["10.0.1.2", "10.0.1.3"]
[links.1.link]
rate_bps = 1e6
[links.1.aqm]
name = "codel"
```

Everything is validated before anything is written to a switch; an error
names the field (``aqm.red.th_min``) and its allowed range.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from refmodel.aqms import SECTIONS, knob_names
from refmodel.params import ConfigError, PipelineParams, check_link, client_key, pipeline_params

# Each AQM's knob table [aqm.<section>] and its keys come from its module (refmodel/aqms/).
KNOWN = {
    "link": {"rate_bps", "bucket_bytes", "telemetry"},
    "buffer": {"packets", "bytes"},
    "aqm": {"name", "ecn", *SECTIONS},
    **{f"aqm.{s}": knob_names(s) for s in SECTIONS},
}
# IWA's integers (refmodel.params.IwaParams) and the knob each is derived from, so that an error about a
# derived integer also names what the configuration said.
IWA_SOURCES = {"target_ns": "target_s", "mss_bytes": "mtu_bytes", "payload_ns_q16": "mtu_bytes",
               "bytes_per_ns_q32": "mtu_bytes", "hold_ns": "hold_s", "age_ns": "age_s"}
IWA_INTEGERS = {"mtu_bytes"}  # the other IWA knobs are numbers (seconds)


def _check_iwa(table: dict) -> dict:
    for k, v in table.items():
        ok = isinstance(v, int) if k in IWA_INTEGERS else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok:
            kind = "an integer" if k in IWA_INTEGERS else "a number"
            raise ConfigError(f"aqm.iwa: {k} = {v!r} is not {kind}")
    return table


def _iwa_source(message: str, iwa: dict) -> str:
    """' (from aqm.iwa.mtu_bytes = 40)' when the error is about an integer derived from a configured knob."""
    field = message.split(":", 1)[-1].strip().split(" ", 1)[0]
    knob = IWA_SOURCES.get(field)
    return f" (from aqm.iwa.{knob} = {iwa[knob]!r})" if knob in iwa else ""


def _check_keys(section: str, table: Any) -> dict:
    if not isinstance(table, dict):
        raise ConfigError(f"{section}: expected a table, got {type(table).__name__}")
    unknown = set(table) - KNOWN[section]
    if unknown:
        raise ConfigError(f"{section}: unknown key(s) {sorted(unknown)}; allowed {sorted(KNOWN[section])}")
    return table


def params_from_dict(cfg: dict, aqm: str | None = None) -> PipelineParams:
    """The data plane's parameters from a configuration table (optionally overriding the AQM)."""
    for top in cfg:
        if top not in ("link", "buffer", "aqm", "links"):
            raise ConfigError(f"unknown section [{top}]; allowed [link], [buffer], [aqm], [links.N]")
    link = _check_keys("link", cfg.get("link", {}))
    buf = _check_keys("buffer", cfg.get("buffer", {}))
    a = _check_keys("aqm", cfg.get("aqm", {}))
    if "rate_bps" not in link:
        raise ConfigError("link.rate_bps is required")
    knobs = {k: _check_keys(f"aqm.{k}", a[k]) for k in SECTIONS if k in a}
    if "iwa" in knobs:
        _check_iwa(knobs["iwa"])
    name = aqm or a.get("name", "fifo")
    if str(name).lower() == "red" and "red" not in knobs:
        raise ConfigError("aqm.red: the red AQM needs w_q, max_p, th_min and th_max")
    try:
        return pipeline_params(
            float(link["rate_bps"]), name, limit_pkts=int(buf.get("packets", 0)),
            limit_bytes=int(buf.get("bytes", 0)), bucket_bytes=int(link.get("bucket_bytes", 1514)),
            ecn=bool(a.get("ecn", False)), telemetry=link.get("telemetry", "all"), **knobs,
        )
    except TypeError as e:  # a knob the function does not take
        raise ConfigError(f"aqm: {e}") from None
    except ConfigError as e:
        section = str(e).split(":", 1)[0]
        if section == "iwa":
            raise ConfigError(f"aqm.{e}{_iwa_source(str(e), knobs['iwa'])}") from None
        raise ConfigError(f"aqm.{e}" if section in SECTIONS else str(e)) from None


PARAM_SECTIONS = ("link", "buffer", "aqm")


def with_jitter_budget(cfg: dict, budget_ms: float | None) -> dict:
    """``cfg`` with the audio's jitter budget (ms) as the ``budget_s`` of every [aqm.iwa] table (the top level's
    and each [links.N.aqm]'s): the budget the switch installs IWA's target from and the one the tuner tunes it
    for (``tuner.ClosedLoop`` reads it from there). None: ``cfg`` unchanged (its own budget_s, else
    ``refmodel.params.JITTER_BUDGET_MS``). A table whose budget_s says otherwise is refused: one budget."""
    if budget_ms is None:
        return cfg
    budget_s = budget_ms / 1e3

    def put(aqm: Any, where: str) -> Any:
        iwa = aqm.get("iwa", {}) if isinstance(aqm, dict) else None
        if not isinstance(iwa, dict):
            return aqm  # not a table: params_from_dict names it
        if "budget_s" in iwa and iwa["budget_s"] != budget_s:
            raise ConfigError(f"{where}.iwa: budget_s = {iwa['budget_s']!r} disagrees with the jitter budget of "
                              f"{budget_ms:g} ms: give the budget once")
        return {**aqm, "iwa": {**iwa, "budget_s": budget_s}}

    out = {**cfg, "aqm": put(cfg.get("aqm", {}), "aqm")}
    links = cfg.get("links")
    if isinstance(links, dict):
        out["links"] = {k: {**t, "aqm": put(t["aqm"], f"links.{k}.aqm")} if isinstance(t, dict) and "aqm" in t
                        else t for k, t in links.items()}
    return out


def links_from_dict(cfg: dict) -> tuple[dict[int, PipelineParams], dict[str, int]]:
    """The [links.N] sections: link -> its own parameters (only links that give a section of their own),
    and client address -> link."""
    table = cfg.get("links", {})
    if not isinstance(table, dict):
        raise ConfigError("links: expected tables [links.N], e.g. [links.1]")
    links: dict[int, PipelineParams] = {}
    clients: dict[str, int] = {}
    for key, t in table.items():
        where = f"links.{key}"
        try:
            link = check_link(int(key))
        except ValueError as e:  # not a number, or out of range (ConfigError is a ValueError)
            detail = str(e) if isinstance(e, ConfigError) else "a link is named by its number, e.g. [links.1]"
            raise ConfigError(f"{where}: {detail}") from None
        if not isinstance(t, dict):
            raise ConfigError(f"{where}: expected a table")
        unknown = set(t) - {"clients", *PARAM_SECTIONS}
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed clients, link, buffer, aqm")
        addrs = t.get("clients", [])
        if not isinstance(addrs, list):
            raise ConfigError(f"{where}.clients: expected a list of IPv4 addresses or IPv6 prefixes")
        for c in addrs:
            try:
                addr = str(client_key(c))
            except ConfigError as e:
                raise ConfigError(f"{where}.clients: {e}") from None
            if addr in clients:
                raise ConfigError(f"{where}.clients: {addr} is already a client of link {clients[addr]}")
            clients[addr] = link
        merged = link_table(cfg, t)
        if merged is not None:
            try:
                links[link] = params_from_dict(merged)
            except ConfigError as e:
                raise ConfigError(f"{where}.{e}") from None
    return links, clients


def link_table(cfg: dict, section: dict) -> dict | None:
    """A [links.N] section's configuration table: the top level's [link], [buffer], [aqm], each replaced whole
    by the section's own; None when the section gives none (the link runs on the defaults)."""
    own = {k: section[k] for k in PARAM_SECTIONS if k in section}
    return ({k: v for k, v in cfg.items() if k in PARAM_SECTIONS} | own) if own else None


def link_tables(cfg: dict) -> dict[int, dict]:
    """link -> its configuration table, for every [links.N] with parameters of its own (checked by
    ``links_from_dict`` first)."""
    links_from_dict(cfg)
    out = {}
    for key, t in cfg.get("links", {}).items():
        merged = link_table(cfg, t)
        if merged is not None:
            out[int(key)] = merged
    return out


def load_table(path: str | Path) -> dict:
    """The configuration table of a TOML file (or JSON, as the lab writes it for each run), unvalidated."""
    path = Path(path)
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table at the top level")
    return data.get("switch", data)


def load(path: str | Path, aqm: str | None = None) -> PipelineParams:
    """Validated parameters from a TOML or JSON file (link 0's and every link's without its own)."""
    return params_from_dict(load_table(path), aqm)


def load_links(path: str | Path) -> tuple[dict[int, PipelineParams], dict[str, int]]:
    """Validated [links.N] sections of a TOML or JSON file (``links_from_dict``)."""
    return links_from_dict(load_table(path))
