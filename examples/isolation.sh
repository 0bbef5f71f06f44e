# isolation.sh: what a program sees inside an execfarm sandbox.
# Run with: bin/execfarm run --runtime shell examples/isolation.sh
echo "uid: $(id -u)   hostname: $(hostname)"
echo "processes visible: $(ls /proc | grep -c '^[0-9]')"
touch /usr/x 2>/dev/null && echo "wrote /usr (BAD)" || echo "/usr is read-only"
cat /etc/shadow 2>/dev/null || echo "no /etc/shadow here"
echo "working directory: $(pwd)"
