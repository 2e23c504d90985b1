#!/usr/bin/env bash
# Seeds the v2fhir_convert target with the shared HL7 v2 messages (../shared/data/hl7v2 beside the repository: the
# FHIR-Converter and trusted-intermediary corpora and the crash inputs), one file per message file, named by its content's
# hash as libFuzzer names its own. The corpus stays outside git (fuzz/corpus is ignored): it is the shared data's.
set -euo pipefail
cd "$(dirname "$0")"
data=../../shared/data/hl7v2
[[ -d $data ]] || { echo "the shared HL7 v2 data is missing: $(cd .. && pwd)/../shared/data/hl7v2" >&2; exit 1; }
mkdir -p corpus/v2fhir_convert
find "$data/fhir-converter" "$data/trusted-intermediary" "$data/bad-inputs" -type f ! -name 'LICENSE*' ! -name '*.md' ! -name '*.json' -size -256k -print0 |
    while IFS= read -r -d '' f; do
        cp "$f" "corpus/v2fhir_convert/$(sha1sum "$f" | cut -c1-40)"
    done
echo "seeded $(ls corpus/v2fhir_convert | wc -l) inputs into fuzz/corpus/v2fhir_convert" >&2
