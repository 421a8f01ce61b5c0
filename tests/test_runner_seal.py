"""The hooks' seal on what they built for a runner (hooks/runner_seal.py)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given
from hypothesis import strategies as st

from hooks.github.port import Scope
from hooks.runner_seal import (
    ID_SEAL_ANNOTATION,
    runner_id_seal,
    runner_id_sealed,
    runner_seal,
    seal_holds,
    seal_key,
)
from hooks.settings import Settings


def pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def app_settings(private_key: str) -> Settings:
    return Settings.model_validate(
        {
            "GITHUB_APP_ID": "1",
            "GITHUB_APP_INSTALLATION_ID": 2,
            "GITHUB_APP_PRIVATE_KEY": private_key,
        }
    )


def test_an_app_key_given_as_a_path_seals_with_the_key_not_the_path(tmp_path: Path) -> None:
    """The path is in the Deployment for anyone to read: a key derived from it let anyone who
    may annotate a pod forge a seal."""
    text = pem()
    (tmp_path / "a.pem").write_text(text)
    (tmp_path / "b.pem").write_text(text)
    (tmp_path / "other.pem").write_text(pem())

    by_path = seal_key(app_settings(str(tmp_path / "a.pem")))

    assert by_path is not None
    assert (
        by_path == seal_key(app_settings(text)) == seal_key(app_settings(str(tmp_path / "b.pem")))
    )
    assert by_path != seal_key(app_settings(str(tmp_path / "other.pem")))
    assert seal_key(app_settings(str(tmp_path / "absent.pem"))) is None
    assert seal_key(Settings.model_validate({})) is None


names = st.text(min_size=1, max_size=20)
scopes = st.builds(Scope, organization=names, repository=st.just(""), enterprise=st.just(""))


@given(names, names, scopes, names, names, names, scopes, names)
def test_a_seal_holds_for_exactly_what_it_was_made_for(
    namespace: str,
    pod: str,
    scope: Scope,
    runner: str,
    other_namespace: str,
    other_pod: str,
    other_scope: Scope,
    other_runner: str,
) -> None:
    key = b"k" * 32
    seal = runner_seal(key, namespace, pod, scope, runner)

    assert seal_holds(seal, key, namespace, pod, scope, runner)
    assert not seal_holds(seal, b"x" * 32, namespace, pod, scope, runner)
    assert not seal_holds(seal, None, namespace, pod, scope, runner)
    made_for = (namespace, pod, scope, runner)
    for claim in (
        (other_namespace, pod, scope, runner),
        (namespace, other_pod, scope, runner),
        (namespace, pod, other_scope, runner),
        (namespace, pod, scope, other_runner),
    ):
        assert seal_holds(seal, key, *claim) == (claim == made_for)


def test_pod_seals_made_before_keep_holding_and_runner_id_seals_do_not() -> None:
    """Pods sealed by earlier builds stay sealed (the value is those builds' own). Their runner
    id seals do not: one of those may be a pod seal harvested for a runner named "x\n101"
    (found in review); an id not believed is looked up by name and recorded anew."""
    key, scope = b"k" * 32, Scope(organization="acme")

    assert runner_seal(key, "ns", "pod-0", scope, "runner-a") == "79bef585986ca93b5751131a0bffb67e"
    before = "c457ac7e220c5c5671d3f927be2a44e1"  # runner-a's seal of id 101, by earlier builds
    assert runner_id_seal(key, "ns", "pod-0", scope, "runner-a", 101) != before
    # What earlier builds sealed for a pod whose RUNNER_NAME was "x\n101": their id seal of
    # runner "x", id 101.
    joined = "\n".join(("ns", "pod-0", "", "acme", "", "x\n101"))
    harvested = hmac.new(key, joined.encode(), hashlib.sha256).hexdigest()[:32]
    annotations: dict[str, object] = {ID_SEAL_ANNOTATION: harvested}
    assert not runner_id_sealed(annotations, key, "ns", "pod-0", scope, "x", 101)


def test_a_runner_name_with_a_newline_is_not_a_runner_ids_seal() -> None:
    """A pod's creator writes its RUNNER_NAME: the decorator's seal for a runner named
    "x\\n101" was the seal of runner id 101 for runner "x", which a stop removes by id."""
    key, scope = b"k" * 32, Scope(organization="acme")
    forged = runner_seal(key, "ns", "pod-0", scope, "x\n101")

    annotations: dict[str, object] = {ID_SEAL_ANNOTATION: forged}
    assert not runner_id_sealed(annotations, key, "ns", "pod-0", scope, "x", 101)


texts = st.text(max_size=12)
any_scopes = st.builds(Scope, enterprise=texts, organization=texts, repository=texts)


@given(texts, texts, any_scopes, texts, texts, texts, any_scopes, texts, st.integers(0, 10**12))
def test_no_pod_seal_is_a_runner_id_seal(
    namespace: str,
    pod: str,
    scope: Scope,
    runner: str,
    id_namespace: str,
    id_pod: str,
    id_scope: Scope,
    id_runner: str,
    runner_id: int,
) -> None:
    key = b"k" * 32
    pod_seal = runner_seal(key, namespace, pod, scope, runner)
    annotations: dict[str, object] = {ID_SEAL_ANNOTATION: pod_seal}

    assert not runner_id_sealed(
        annotations, key, id_namespace, id_pod, id_scope, id_runner, runner_id
    )
