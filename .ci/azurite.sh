#!/usr/bin/env bash
# Install Azurite (a devDependency in package.json) from the lockfile, unless it is already there.
# Usage: .ci/azurite.sh            -> node_modules/.bin/azurite is ready afterwards
# Tests start their own Azurite on free ports; to share one server, start it and export
# AZURITE_BLOB_ENDPOINT / AZURITE_QUEUE_ENDPOINT (see docs/azurite.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
    echo "azurite: npm is not installed; install Node.js 18+ to run the Azurite tests" >&2
    exit 1
fi

if [ -x node_modules/.bin/azurite ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
    echo "azurite: $(node_modules/.bin/azurite --version) already installed"
    exit 0
fi

echo "azurite: installing from package-lock.json (npm ci)"
npm ci --no-audit --no-fund
echo "azurite: $(node_modules/.bin/azurite --version) installed"
