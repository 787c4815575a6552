# Shared by scripts/setup and scripts/validate-manifests (sourced, not run): the pinned tools
# that come from PyPI rather than Debian, and where they live.
VALIDATOR_VERSION=1.37.0
VALIDATOR_VENV=$PWD/target/tools/kubernetes-validate
