{{/* The name every object of the release carries; the install is meant once per cluster. */}}
{{- define "liqo-janitor.name" -}}liqo-janitor{{- end }}

{{/* The full app.kubernetes.io label set, component gate-and-janitor. */}}
{{- define "liqo-janitor.labels" -}}
{{ include "liqo-janitor.commonLabels" . }}
app.kubernetes.io/component: gate-and-janitor
{{- end }}

{{/* The app.kubernetes.io label set but the component, and commonLabels. */}}
{{- define "liqo-janitor.commonLabels" -}}
app.kubernetes.io/name: liqo-janitor
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: liqo
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The annotations block of an object's metadata (commonAnnotations), or nothing: include it as
  {{- include "liqo-janitor.annotations" . }} right under metadata (it brings its own newline and indent). */}}
{{- define "liqo-janitor.annotations" -}}
{{- with .Values.commonAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
{{- end }}
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

{{/* The ServiceAccount the pods run as: the janitor's own identity. */}}
{{- define "liqo-janitor.serviceAccountName" -}}liqo-janitor{{- end }}

{{/* The username the API server gives the janitor's ServiceAccount: the only user the policies let write
what the janitor writes (its annotations on ForeignClusters, its Events, identity-Secret finalizers). */}}
{{- define "liqo-janitor.serviceAccountUser" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "liqo-janitor.serviceAccountName" . }}
{{- end }}

{{- /* The identities whose bare marks the gate accepts as Liqo's uninstaller's (gate rule 18), comma-separated:
liqo.uninstaller.users, or Liqo's pre-delete Job's ServiceAccount in liqo.namespace; none when disabled (the
default). */}}
{{- define "liqo-janitor.liqoUninstallerUsers" -}}
{{- if .Values.liqo.uninstaller.enabled }}
{{- if .Values.liqo.uninstaller.users }}{{ join "," .Values.liqo.uninstaller.users }}
{{- else }}system:serviceaccount:{{ .Values.liqo.namespace }}:liqo-pre-delete{{ end }}
{{- end }}
{{- end }}

{{- /* "true" where the cluster serves ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in Kubernetes
1.30), else "". Installed or upgraded against a cluster (or given --api-versions), Helm lists each served
kind: the policy's kind decides. A client-only render (`helm template`, make manifests) lists API groups
only: the Kubernetes version decides (--kube-version; the chart's kubeVersion already asks for 1.30). */}}
{{- define "liqo-janitor.validatingAdmissionPolicySupported" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" }}true
{{- else if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration" }}
{{- else if semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version }}true
{{- end }}
{{- end }}

{{/* The DNS names the API server calls the webhook Service by. */}}
{{- define "liqo-janitor.webhookService" -}}liqo-janitor-webhook{{- end }}

{{/* The metrics Service: the serving certificate covers it too, for the ServiceMonitor's TLS. */}}
{{- define "liqo-janitor.metricsService" -}}liqo-janitor-metrics{{- end }}

{{/* The scraper's ServiceAccount the chart makes for the ServiceMonitor (serviceMonitor.tokenSecret ""). */}}
{{- define "liqo-janitor.metricsScraper" -}}liqo-janitor-metrics-scraper{{- end }}

{{/* The Secret whose key token the ServiceMonitor scrapes with: serviceMonitor.tokenSecret, or the chart's. */}}
{{- define "liqo-janitor.metricsTokenSecret" -}}{{ .Values.serviceMonitor.tokenSecret | default "liqo-janitor-metrics-token" }}{{- end }}

{{/* The name of both webhook configurations (--webhook-configuration with self-managed certificates). */}}
{{- define "liqo-janitor.webhookConfiguration" -}}liqo-janitor{{- end }}

{{/* Without cert-manager (--cert-management=self), the two Secrets of the release namespace the binary keeps
its certificates in (webhook/certs CASecretName and CertSecretName; test/e2e/manifests checks they agree):
the CA's and the serving certificate's. Named once here for the RBAC that narrows reads and patches to them,
the policy that lets the janitor create only them (templates/certs-policy.yaml), and the identity-Secret
policy that leaves them to that one. */}}
{{- define "liqo-janitor.caSecret" -}}liqo-janitor-webhook-ca{{- end }}
{{- define "liqo-janitor.certSecret" -}}liqo-janitor-webhook-cert{{- end }}

{{/* cert-manager's CA Certificate and its Secret, the trust anchor the CA injector copies. */}}
{{- define "liqo-janitor.caCertificate" -}}liqo-janitor-ca{{- end }}

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

{{/* The seconds a Go duration string (as values.schema.json admits them: 1m30s, 500ms) stands for. */}}
{{- define "liqo-janitor.durationSeconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 }}
{{- $total := 0.0 }}
{{- range $part := regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" . -1 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $part }}
{{- $unit := trimPrefix $number $part }}
{{- $total = addf $total (mulf (float64 $number) (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/* The provider fence agent (providerFence.enabled, janitor/providerfence): its Deployment, ServiceAccount,
roles and metrics Service are all named so. */}}
{{- define "liqo-janitor.providerFence" -}}liqo-janitor-provider-fence{{- end }}

{{/* The provider fence's objects' labels: the chart's, component provider-fence. */}}
{{- define "liqo-janitor.providerFence.labels" -}}
{{ include "liqo-janitor.commonLabels" . }}
app.kubernetes.io/component: provider-fence
{{- end }}

{{/* What the provider fence's Deployment, metrics Service and disruption budget select its pods by: a name of
their own, so that none of the consumer's selectors (liqo-janitor.selectorLabels: its webhook Service, its
disruption budget, its spread) ever picks an agent's pod. */}}
{{- define "liqo-janitor.providerFence.selectorLabels" -}}
app.kubernetes.io/name: {{ include "liqo-janitor.providerFence" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The provider fence's metrics Service (job="liqo-janitor-provider-fence-metrics" in Prometheus). */}}
{{- define "liqo-janitor.providerFence.metricsService" -}}liqo-janitor-provider-fence-metrics{{- end }}

{{/* The provider fence's generated RBAC (files/provider-fence/role.yaml, `make manifests`, from the markers
of janitor/providerfence alone), as a list of objects. */}}
{{- define "liqo-janitor.providerFence.generatedRBAC" -}}
{{- $out := list }}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.Files.Get "files/provider-fence/role.yaml") -1 }}
{{- $o := fromYaml $doc }}
{{- if $o }}{{ $out = append $out $o }}{{ end }}
{{- end }}
{{- toYaml (dict "items" $out) }}
{{- end }}

{{/* The labels of the provider fence's pods: its selector labels, the chart's others (but its name), and
commonLabels. */}}
{{- define "liqo-janitor.providerFence.podLabels" -}}
{{ include "liqo-janitor.providerFence.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: liqo
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: provider-fence
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}
