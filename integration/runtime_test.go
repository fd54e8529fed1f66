package integration

import "encoding/json"

func parseRuntime(body []byte) (map[string]string, error) {
	var info struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, err
	}
	return info.Table, nil
}
