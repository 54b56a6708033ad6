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

{{/* The pods' securityContext (podSecurityContext), restricted by default, no user. */}}
{{- define "mcs-policy.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end }}

{{/* The containers' securityContext (securityContext), restricted by default, no user. */}}
{{- define "mcs-policy.containerSecurityContext" -}}
{{ toYaml .Values.securityContext }}
{{- end }}

{{/* The metadata of a component's pods: (dict "root" $ "component" "webhook"). Labels: the
     release-wide podLabels, the component's, then the chart's (which win); annotations: the
     release-wide podAnnotations, then the component's. */}}
{{- define "mcs-policy.podMetadata" -}}
{{- $c := index .root.Values .component }}
{{- $labels := merge (include "mcs-policy.labels" . | fromYaml) (deepCopy ($c.podLabels | default dict)) (deepCopy (.root.Values.podLabels | default dict)) }}
{{- $annotations := merge (deepCopy ($c.podAnnotations | default dict)) (deepCopy (.root.Values.podAnnotations | default dict)) }}
{{- if and (eq .component "sync") .root.Values.sync.members.kubeconfig }}
{{- /* A changed members' kubeconfig restarts the pods, which read it at start. */}}
{{- $_ := set $annotations "checksum/members-kubeconfig" (sha256sum .root.Values.sync.members.kubeconfig) }}
{{- end }}
labels:
  {{- toYaml $labels | nindent 2 }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Scheduling of a component's pods: (dict "root" $ "component" "webhook"). The component's
     nodeSelector, tolerations, priorityClassName when set, else the release-wide ones; its
     affinity and topologySpreadConstraints when set, else the chart's (one pod per node
     preferred; the webhook spread over zones); the pull secrets. */}}
{{- define "mcs-policy.scheduling" -}}
{{- $v := .root.Values }}
{{- $c := index $v .component }}
{{- with $c.nodeSelector | default $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations | default $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.priorityClassName | default $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
affinity:
{{- if $c.affinity }}
  {{- toYaml $c.affinity | nindent 2 }}
{{- else }}
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "mcs-policy.selector" .component | nindent 14 }}
{{- end }}
{{- if $c.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml $c.topologySpreadConstraints | nindent 2 }}
{{- else if eq .component "webhook" }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "mcs-policy.selector" .component | nindent 8 }}
{{- end }}
{{- end }}

{{/* "true" when the ValidatingWebhookConfiguration has the ServiceExport webhook:
     webhook.serviceExports.enabled, or when it is not set, on with target cluster and off with
     target karmada-apiserver. */}}
{{- define "mcs-policy.serviceExports" -}}
{{- $set := .Values.webhook.serviceExports.enabled }}
{{- if kindIs "bool" $set }}{{ if $set }}true{{ end }}
{{- else if ne .Values.target "karmada-apiserver" }}true{{ end -}}
{{- end }}

{{/* The kubeconfig Secret volume of Karmada mode. */}}
{{- define "mcs-policy.karmadaKubeconfigVolume" -}}
- name: karmada-kubeconfig
  secret:
    secretName: {{ .Values.karmada.kubeconfigSecret.name }}
    defaultMode: 292 # 0444: read-only, readable whatever UID the pod runs as
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

{{/* The self-managed webhook server's rights on the two webhook configurations the chart
     renders, in the API server that holds them: read and patch (its CA into caBundle), by
     name. Never create or delete: the chart owns them. */}}
{{- define "mcs-policy.webhookConfigurationsRBAC" -}}
# The two webhook configurations the chart renders: read and patched (the CA in caBundle) by
# name, nothing else; Helm creates and deletes them.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: mcs-policy-webhook-configurations
  labels:
    {{- include "mcs-policy.labels" (dict "root" . "component" "webhook") | nindent 4 }}
rules:
  - apiGroups: ["admissionregistration.k8s.io"]
    resources: ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"]
    resourceNames: [{{ .Values.webhook.configurationName | quote }}]
    verbs: ["get", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: mcs-policy-webhook-configurations
  labels:
    {{- include "mcs-policy.labels" (dict "root" . "component" "webhook") | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: mcs-policy-webhook-configurations
subjects:
  - kind: ServiceAccount
    name: mcs-policy
    namespace: {{ .Release.Namespace }}
{{- end }}
