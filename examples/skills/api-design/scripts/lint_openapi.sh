#!/usr/bin/env bash
set -euo pipefail
npx --yes @redocly/cli lint "$1"
