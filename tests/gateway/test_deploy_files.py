"""docs/deploy's Kubernetes files hold together: the Zero to JupyterHub values validate against
the chart's values schema (a subset kept in tests/gateway/z2jh_values_schema.yaml: every key the
chart accepts where these values set one), the gateway's command lines parse with its own
parser and take PostgreSQL with `--db`, the key and the database password come from a Secret,
and the addresses agree (the Hub service's URL, the ports, the kernels' gateway URL). The files
are plain YAML: nothing is templated, so rendering is parsing. What this cannot check is a real
cluster: the chart's templates and Kubernetes itself are not run here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ipy_agent.gateway.__main__ import parser

ROOT = Path(__file__).resolve().parents[2]
VALUES = ROOT / "docs" / "deploy" / "z2jh-values.yaml"
REPLICAS = ROOT / "docs" / "deploy" / "gateway-replicas.yaml"
SCHEMA = Path(__file__).with_name("z2jh_values_schema.yaml")
SERVICE = "ipy-agent-gateway"


def values() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(VALUES.read_text())
    return loaded


def gateway_args(container: dict[str, Any]) -> Any:
    """The container's command parsed by `python -m ipy_agent.gateway`'s own parser."""
    command = container["command"]
    assert command[:3] == ["python", "-m", "ipy_agent.gateway"]
    try:
        return parser().parse_args(command[3:])
    except SystemExit:
        pytest.fail(f"the gateway's parser refuses the command line {command}")


def secrets_only(container: dict[str, Any]) -> dict[str, Any]:
    env = {e["name"]: e for e in container["env"]}
    for name in ("ANTHROPIC_API_KEY", "PGPASSWORD"):
        assert "value" not in env[name] and env[name]["valueFrom"]["secretKeyRef"]["name"] == SERVICE
    return env


def check_postgres(args: Any) -> None:
    assert args.db.startswith("postgresql://") and ":" not in args.db.split("://")[1].split("@")[0]  # no password


def test_the_z2jh_values_validate_against_the_charts_schema():
    jsonschema.validate(values(), yaml.safe_load(SCHEMA.read_text()))


def test_control_the_schema_refuses_a_misspelt_key():
    broken = values()
    broken["hub"]["extraContainer"] = broken["hub"].pop("extraContainers")
    with pytest.raises(jsonschema.ValidationError, match="extraContainer"):
        jsonschema.validate(broken, yaml.safe_load(SCHEMA.read_text()))


def test_the_z2jh_values_run_the_gateway_as_a_hub_service_on_postgresql():
    hub = values()["hub"]
    (container,) = [c for c in hub["extraContainers"] if c["name"] == SERVICE]
    args = gateway_args(container)
    check_postgres(args)
    assert args.host == "0.0.0.0" and args.per_day_usd == 2
    env = secrets_only(container)
    assert env["JUPYTERHUB_API_URL"]["value"].endswith("/hub/api")
    # The proxy reaches it: the service's URL, the hub Service's extra port and the network rule agree.
    assert hub["services"][SERVICE]["url"] == f"http://hub:{args.port}"
    assert {"name": "ipy-agent-gw", "port": args.port, "targetPort": args.port} in hub["service"]["extraPorts"]
    assert {"port": args.port} in hub["networkPolicy"]["ingress"][0]["ports"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": args.port}
    kernels = values()["singleuser"]["extraEnv"]["IPY_AGENT_GATEWAY_URL"]
    assert kernels == f"http://proxy-public/services/{SERVICE}"


def test_the_replicas_manifest_runs_two_gateways_on_one_database_behind_one_service():
    deployment, service = yaml.safe_load_all(REPLICAS.read_text())
    assert (deployment["kind"], service["kind"]) == ("Deployment", "Service")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    args = gateway_args(container)
    check_postgres(args)
    secrets_only(container)
    sidecar = next(c for c in values()["hub"]["extraContainers"] if c["name"] == SERVICE)
    assert args.db == gateway_args(sidecar).db  # the same database as the values' gateway
    assert pod["spec"]["terminationGracePeriodSeconds"] > args.drain_seconds  # the drain ends before SIGKILL
    assert pod["metadata"]["labels"]["hub.jupyter.org/network-access-hub"] == "true"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == args.port
    assert f"url: http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}" in REPLICAS.read_text()
