// Package bundle is fleetgate's OLM bundle (registry+v1) as Go values: the ClusterServiceVersion
// fields the generator writes (bundle/gen), a loader for bundle/, checks equivalent to
// `operator-sdk bundle validate --select-optional suite=operatorframework`, and the objects OLM
// would create from it, so that tests can install the bundle on an API server without OLM.
//
// The CSV types mirror the subset of operators.coreos.com/v1alpha1 that fleetgate uses; the
// operator-framework/api module cannot be downloaded here. Field names and JSON tags follow it.
package bundle

import (
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CSV is a ClusterServiceVersion.
type CSV struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        CSVMetadata `json:"metadata"`
	Spec            CSVSpec     `json:"spec"`
}

// CSVMetadata is the part of ObjectMeta a CSV in a bundle carries (no namespace, no status fields).
type CSVMetadata struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// CSVSpec is what OperatorHub shows and what OLM installs.
type CSVSpec struct {
	DisplayName               string                    `json:"displayName"`
	Description               string                    `json:"description"`
	Version                   string                    `json:"version"`
	Maturity                  string                    `json:"maturity"`
	MinKubeVersion            string                    `json:"minKubeVersion"`
	Provider                  AppLink                   `json:"provider"`
	Maintainers               []Maintainer              `json:"maintainers"`
	Links                     []AppLink                 `json:"links"`
	Icon                      []Icon                    `json:"icon"`
	Keywords                  []string                  `json:"keywords"`
	InstallModes              []InstallMode             `json:"installModes"`
	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions"`
	Install                   NamedInstallStrategy      `json:"install"`
	RelatedImages             []RelatedImage            `json:"relatedImages"`
}

// AppLink is a named URL.
type AppLink struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Maintainer is a person or team to contact.
type Maintainer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Icon is a base64-encoded image.
type Icon struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// InstallMode says whether an OperatorGroup of that type may install the operator.
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// The four install modes of OLM.
const (
	OwnNamespace    = "OwnNamespace"
	SingleNamespace = "SingleNamespace"
	MultiNamespace  = "MultiNamespace"
	AllNamespaces   = "AllNamespaces"
)

// CustomResourceDefinitions lists the CRDs the operator owns and requires.
type CustomResourceDefinitions struct {
	Owned    []CRDDescription `json:"owned"`
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription describes an owned CRD for the OLM UI.
type CRDDescription struct {
	Name              string        `json:"name"`
	Version           string        `json:"version"`
	Kind              string        `json:"kind"`
	DisplayName       string        `json:"displayName"`
	Description       string        `json:"description"`
	Resources         []APIResource `json:"resources,omitempty"`
	SpecDescriptors   []Descriptor  `json:"specDescriptors,omitempty"`
	StatusDescriptors []Descriptor  `json:"statusDescriptors,omitempty"`
}

// APIResource is a kind of object the operator creates for a custom resource.
type APIResource struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// Descriptor tells the OLM UI how to show one field (path is dotted, relative to spec or status).
type Descriptor struct {
	Path         string   `json:"path"`
	DisplayName  string   `json:"displayName"`
	Description  string   `json:"description,omitempty"`
	XDescriptors []string `json:"x-descriptors,omitempty"`
}

// NamedInstallStrategy is the deployment install strategy, the only one OLM has.
type NamedInstallStrategy struct {
	Strategy string          `json:"strategy"`
	Spec     InstallStrategy `json:"spec"`
}

// InstallStrategy holds the Deployments and the RBAC of their service accounts.
type InstallStrategy struct {
	ClusterPermissions []Permissions    `json:"clusterPermissions,omitempty"`
	Permissions        []Permissions    `json:"permissions,omitempty"`
	Deployments        []DeploymentSpec `json:"deployments"`
}

// Permissions are the rules OLM grants a service account: cluster-wide (ClusterRole) or in the
// install namespace (Role).
type Permissions struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// DeploymentSpec is a named Deployment OLM creates in the install namespace.
type DeploymentSpec struct {
	Name string                `json:"name"`
	Spec appsv1.DeploymentSpec `json:"spec"`
}

// RelatedImage is an image the operator runs or deploys, for disconnected mirroring.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}
