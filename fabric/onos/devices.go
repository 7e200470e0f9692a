package onos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
)

// Defaults of Switch.
const (
	DefaultDriver   = "stratum-bmv2"
	DefaultPipeconf = "org.distcache.cache_switch.v1model"
)

// ErrUnknownDevice says ONOS has no such device (it was never configured,
// or ONOS has not yet connected to it).
var ErrUnknownDevice = errors.New("ONOS has no such device")

// Switch is one switch of the fabric as ONOS's network configuration
// names it (stratum_pipelines/onos/netcfg.json).
type Switch struct {
	// DeviceID is ONOS's device id, for instance device:distcache:spine-a.
	DeviceID string
	// P4RuntimeAddress is the switch's P4Runtime endpoint (host:port) and
	// P4RuntimeDeviceID its P4Runtime device id.
	P4RuntimeAddress  string
	P4RuntimeDeviceID uint64
	// Driver is ONOS's device driver (DefaultDriver); Pipeconf the id of
	// the pipeconf ONOS pushes to the switch (DefaultPipeconf).
	Driver, Pipeconf string
	// Name is the device's display name in ONOS (optional).
	Name string
}

// basicConfig is a device's "basic" configuration (ONOS's
// BasicDeviceConfig).
type basicConfig struct {
	ManagementAddress string `json:"managementAddress"`
	Driver            string `json:"driver"`
	Pipeconf          string `json:"pipeconf"`
	Name              string `json:"name,omitempty"`
}

type deviceConfig struct {
	Basic basicConfig `json:"basic"`
}

// ManagementAddress is the switch's P4Runtime address as ONOS's
// P4Runtime provider reads it: grpc://host:port?device_id=N.
func (s Switch) ManagementAddress() string {
	q := url.Values{"device_id": {strconv.FormatUint(s.P4RuntimeDeviceID, 10)}}
	return (&url.URL{Scheme: "grpc", Host: s.P4RuntimeAddress, RawQuery: q.Encode()}).String()
}

func (s Switch) config() (deviceConfig, error) {
	if s.DeviceID == "" {
		return deviceConfig{}, errors.New("a switch has no ONOS device id")
	}
	if _, _, err := net.SplitHostPort(s.P4RuntimeAddress); err != nil {
		return deviceConfig{}, fmt.Errorf("switch %s has P4Runtime address %q: %w", s.DeviceID, s.P4RuntimeAddress, err)
	}
	driver, pipeconf := s.Driver, s.Pipeconf
	if driver == "" {
		driver = DefaultDriver
	}
	if pipeconf == "" {
		pipeconf = DefaultPipeconf
	}
	return deviceConfig{Basic: basicConfig{ManagementAddress: s.ManagementAddress(), Driver: driver, Pipeconf: pipeconf, Name: s.Name}}, nil
}

// ConfigureDevices puts the switches into ONOS's network configuration
// (POST /network/configuration): ONOS connects to each over P4Runtime
// and pushes its pipeconf. Configuring a device again is harmless.
func (c *Client) ConfigureDevices(ctx context.Context, switches ...Switch) error {
	devices := map[string]deviceConfig{}
	for _, s := range switches {
		cfg, err := s.config()
		if err != nil {
			return fmt.Errorf("cannot configure devices in ONOS: %w", err)
		}
		devices[s.DeviceID] = cfg
	}
	body := map[string]map[string]deviceConfig{"devices": devices}
	if err := c.do(ctx, request{method: http.MethodPost, segments: []string{"network", "configuration"}, body: body}); err != nil {
		return fmt.Errorf("cannot configure %d devices in ONOS: %w", len(switches), err)
	}
	c.log.Info("devices configured", "devices", len(switches))
	return nil
}

// RemoveDevice removes a switch that left the fabric: its network
// configuration, then the device from ONOS's inventory (which ONOS keeps
// otherwise); a device ONOS no longer has is no error.
func (c *Client) RemoveDevice(ctx context.Context, deviceID string) error {
	err := c.do(ctx, request{method: http.MethodDelete, segments: []string{"network", "configuration", "devices", deviceID}})
	if err != nil {
		return fmt.Errorf("cannot remove the configuration of %s from ONOS: %w", deviceID, err)
	}
	err = c.do(ctx, request{method: http.MethodDelete, segments: []string{"devices", deviceID}})
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("cannot remove device %s from ONOS: %w", deviceID, err)
	}
	c.log.Info("device removed", "device", deviceID)
	return nil
}

// DeviceState is what ONOS says of a device (GET /devices/{id}).
type DeviceState struct {
	ID string `json:"id"`
	// Available: ONOS holds a connection to the device.
	Available bool `json:"available"`
	// Role is the answering ONOS instance's mastership role for the device:
	// MASTER, STANDBY or NONE.
	Role   string `json:"role"`
	Driver string `json:"driver"`
	// Annotations hold, among others, the device's protocol and
	// managementAddress.
	Annotations map[string]string `json:"annotations"`
}

// Device returns ONOS's state of the device; ErrUnknownDevice when ONOS
// has none.
func (c *Client) Device(ctx context.Context, deviceID string) (DeviceState, error) {
	var d DeviceState
	err := c.do(ctx, request{method: http.MethodGet, segments: []string{"devices", deviceID}, out: &d})
	if IsNotFound(err) {
		return d, fmt.Errorf("cannot read device %s: %w: %w", deviceID, ErrUnknownDevice, err)
	}
	if err != nil {
		return d, fmt.Errorf("cannot read device %s: %w", deviceID, err)
	}
	return d, nil
}
