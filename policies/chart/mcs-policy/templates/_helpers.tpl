{{/* Labels of every object: (dict "root" $ "component" "webhook"). */}}
{{- define "mcs-policy.labels" -}}
app.kubernetes.io/name: mcs-policy
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- if .root.Values.helmLabels }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}
{{- end }}

{{/* Selector labels of a component's pods. */}}
{{- define "mcs-policy.selector" -}}
app.kubernetes.io/name: mcs-policy
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "mcs-policy.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* "true" when the sync controller works on Karmada, else empty. */}}
{{- define "mcs-policy.syncKarmada" -}}
{{- if or .Values.karmada.enabled (eq .Values.sync.mode "karmada") }}true{{ end -}}
{{- end }}

{{/* The namespace of the sync controller's Lease, in the hub. */}}
{{- define "mcs-policy.leaseNamespace" -}}
{{- if eq .Values.target "karmada-apiserver" -}}
{{ .Release.Namespace }}
{{- else if include "mcs-policy.syncKarmada" . -}}
{{ .Values.karmada.namespace }}
{{- else -}}
{{ .Release.Namespace }}
{{- end -}}
{{- end }}

{{/* The namespace of the host cluster running the webhook server. */}}
{{- define "mcs-policy.hostNamespace" -}}
{{- if eq .Values.target "cluster" }}{{ .Release.Namespace }}{{ else }}{{ .Values.karmada.hostNamespace }}{{ end -}}
{{- end }}

{{/* What the karmada-apiserver calls: it resolves no Service of the host cluster. */}}
{{- define "mcs-policy.webhookURL" -}}
https://{{ .Values.webhook.serviceName }}.{{ include "mcs-policy.hostNamespace" . }}.svc:443
{{- end }}

{{/* Where the karmada-apiserver kubeconfig is mounted, as Karmada's own controllers mount it. */}}
{{- define "mcs-policy.karmadaKubeconfig" -}}
/etc/kubeconfig
{{- end }}

{{- define "mcs-policy.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "mcs-policy.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* nodeSelector, tolerations, priorityClassName and pull secrets of every pod. */}}
{{- define "mcs-policy.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- end }}

{{/* The kubeconfig Secret volume of Karmada mode. */}}
{{- define "mcs-policy.karmadaKubeconfigVolume" -}}
- name: karmada-kubeconfig
  secret:
    secretName: {{ .Values.karmada.kubeconfigSecret.name }}
    defaultMode: 288 # 0440: owner and group (fsGroup 65532) read, nothing else
{{- end }}

{{- define "mcs-policy.karmadaKubeconfigMount" -}}
# As karmada-controller-manager mounts it: the one key, at /etc/kubeconfig.
- name: karmada-kubeconfig
  mountPath: {{ include "mcs-policy.karmadaKubeconfig" . }}
  subPath: {{ .Values.karmada.kubeconfigSecret.key }}
  readOnly: true
{{- end }}

{{/* The value combinations the chart refuses, each with what to do. */}}
{{- define "mcs-policy.validate" -}}
{{- if and (eq .Values.target "karmada-apiserver") (ne .Release.Namespace .Values.karmada.namespace) }}
{{- fail (printf "target karmada-apiserver: install into the namespace karmada.namespace (%s), not %s, so the host release finds the Lease's namespace" .Values.karmada.namespace .Release.Namespace) }}
{{- end }}
{{- if and (eq .Values.target "cluster") .Values.webhook.enabled (eq .Values.webhook.certificate.mode "secret") (not .Values.karmada.enabled) (not .Values.webhook.certificate.caBundle) }}
{{- fail "webhook.certificate.mode secret needs webhook.certificate.caBundle: --set-file webhook.certificate.caBundle=ca.crt" }}
{{- end }}
{{- if and (eq .Values.target "karmada-apiserver") .Values.webhook.enabled (ne .Values.webhook.certificate.mode "self-managed") (not .Values.webhook.certificate.caBundle) }}
{{- fail "target karmada-apiserver renders the webhook configurations of modes cert-manager and secret: give the CA with --set-file webhook.certificate.caBundle=ca.crt, or webhook.enabled=false" }}
{{- end }}
{{- if and (eq .Values.target "cluster") (not .Values.webhook.enabled) (not .Values.sync.enabled) }}
{{- fail "webhook.enabled and sync.enabled are both false: nothing to install" }}
{{- end }}
{{- end }}
