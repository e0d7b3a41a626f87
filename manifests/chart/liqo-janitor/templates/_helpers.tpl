{{/* The name every object of the release carries; the install is meant once per cluster. */}}
{{- define "liqo-janitor.name" -}}liqo-janitor{{- end }}

{{/* The full app.kubernetes.io label set, component gate-and-janitor. */}}
{{- define "liqo-janitor.labels" -}}
{{ include "liqo-janitor.commonLabels" . }}
app.kubernetes.io/component: gate-and-janitor
{{- end }}

{{/* The app.kubernetes.io label set but the component. */}}
{{- define "liqo-janitor.commonLabels" -}}
app.kubernetes.io/name: liqo-janitor
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: liqo
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* What the Services, the PodDisruptionBudget and the Deployment select the pods by. */}}
{{- define "liqo-janitor.selectorLabels" -}}
app.kubernetes.io/name: liqo-janitor
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "liqo-janitor.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* The DNS names the API server calls the webhook Service by. */}}
{{- define "liqo-janitor.webhookService" -}}liqo-janitor-webhook{{- end }}

{{/* The generated RBAC (files/role.yaml, `make manifests`), as a list of objects. */}}
{{- define "liqo-janitor.generatedRBAC" -}}
{{- $out := list }}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.Files.Get "files/role.yaml") -1 }}
{{- $o := fromYaml $doc }}
{{- if $o }}{{ $out = append $out $o }}{{ end }}
{{- end }}
{{- toYaml (dict "items" $out) }}
{{- end }}

{{/* The generated webhook configurations (files/webhooks.yaml, `make manifests`), by kind. */}}
{{- define "liqo-janitor.generatedWebhooks" -}}
{{- $out := dict }}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.Files.Get "files/webhooks.yaml") -1 }}
{{- $o := fromYaml $doc }}
{{- if $o }}{{ $_ := set $out $o.kind $o }}{{ end }}
{{- end }}
{{- toYaml $out }}
{{- end }}
