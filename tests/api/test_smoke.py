def test_summary(client):
    r = client.get("/summary")
    assert r.status_code == 200, r.data
    print(r.json)

def test_list(client):
    r = client.get("/registry/origins", headers={"X-Placeholder-Admin": "yes"})
    assert r.status_code == 200, r.data
    print(r.json, r.headers)
