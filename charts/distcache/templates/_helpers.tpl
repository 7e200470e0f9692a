{{/* The chart's name, or nameOverride. */}}
{{- define "distcache.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The release's full name: fullnameOverride, else the release name when it
already contains the chart's name, else release-chart. Object names derive
from it.
*/}}
{{- define "distcache.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "distcache.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods. */}}
{{- define "distcache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "distcache.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Labels of every object the chart renders. */}}
{{- define "distcache.labels" -}}
{{ include "distcache.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels of the monitoring objects: the chart's, release, monitoring.labels. */}}
{{- define "distcache.monitoringLabels" -}}
{{ include "distcache.labels" . }}
{{- with .Values.monitoring.release }}
release: {{ . | quote }}
{{- end }}
{{- with .Values.monitoring.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The operator's ServiceAccount. */}}
{{- define "distcache.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "distcache.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The operator's image: repository:tag, the tag defaulting to appVersion. */}}
{{- define "distcache.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The rules of one kind (ClusterRole or Role) in files/rbac/role.yaml (or
.file), a copy of config/rbac/role.yaml (config/rbac/secrets/role.yaml)
that `make manifests` generates from the operator's +kubebuilder:rbac
markers: the one source of the operator's permissions. Renders them as
YAML.
*/}}
{{- define "distcache.rbacRules" -}}
{{- $kind := .kind -}}
{{- $file := default "files/rbac/role.yaml" .file -}}
{{- $rules := list -}}
{{- range regexSplit "(?m)^---\\s*$" (.root.Files.Get $file) -1 -}}
{{- $doc := fromYaml . -}}
{{- if and $doc (eq (get $doc "kind") $kind) -}}
{{- $rules = concat $rules (get $doc "rules") -}}
{{- end -}}
{{- end -}}
{{- if not $rules -}}
{{- fail (printf "%s has no %s rules: run `make manifests`" $file $kind) -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}
