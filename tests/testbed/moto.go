package testbed

import (
	"context"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// MotoVPC creates, on the AWS API at endpoint (moto), a VPC with two subnets in two zones tagged
// kubernetes.io/role/elb, where subnet discovery finds them for internet-facing load balancers,
// and returns the VPC's ID.
func MotoVPC(ctx context.Context, endpoint string) (string, error) {
	cfg, err := mototest.Config(ctx, endpoint)
	if err != nil {
		return "", err
	}
	api := ec2.NewFromConfig(cfg)
	v, err := api.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: awssdk.String("10.0.0.0/16")})
	if err != nil {
		return "", fmt.Errorf("creating a VPC: %w", err)
	}
	for i, zone := range []string{"a", "b"} {
		sn, err := api.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: v.Vpc.VpcId,
			CidrBlock: awssdk.String(fmt.Sprintf("10.0.%d.0/24", i+1)), AvailabilityZone: awssdk.String(mototest.Region + zone)})
		if err != nil {
			return "", fmt.Errorf("creating a subnet in %s%s: %w", mototest.Region, zone, err)
		}
		if _, err := api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{*sn.Subnet.SubnetId},
			Tags: []ec2types.Tag{{Key: awssdk.String("kubernetes.io/role/elb"), Value: awssdk.String("1")}}}); err != nil {
			return "", fmt.Errorf("tagging subnet %s: %w", *sn.Subnet.SubnetId, err)
		}
	}
	return *v.Vpc.VpcId, nil
}

// AWSClass returns GatewayClass name of an application load balancer class on the AWS API at
// endpoint, in vpc, with its GatewayClassConfig name and the Secret fleetgate-system/name-keys
// holding moto's test keys (the namespace fleetgate-system too), to create in this order.
func AWSClass(name, endpoint, vpc string) []client.Object {
	const ns = "fleetgate-system"
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-keys"},
			Data: map[string][]byte{"access-key-id": []byte("testing"), "secret-access-key": []byte("testing")}},
		&v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS, Scope: v1alpha1.ScopeCluster,
				AWS: &v1alpha1.AWSOptions{LoadBalancerType: v1alpha1.AWSApplication, Region: mototest.Region, Endpoint: endpoint, VPC: vpc,
					Credentials: &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: ns, Name: name + "-keys"}}}}},
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: name}}},
	}
}

// HTTPGateway returns Gateway namespace/name of class with one HTTP listener on 80, and HTTPRoute
// namespace/name sending host's requests under / to Service backend port 80.
func HTTPGateway(namespace, name, class, host, backend string) []client.Object {
	return []client.Object{
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: gwv1.GatewaySpec{
			GatewayClassName: gwv1.ObjectName(class),
			Listeners:        []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}},
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(name)}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
			Rules: []gwv1.HTTPRouteRule{{
				Matches:     []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/")}}},
				BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(backend), Port: ptr.To(gwv1.PortNumber(80))}}}},
			}},
		}},
	}
}
