"""The error envelope: documented once, used in every endpoint's responses."""

from __future__ import annotations

from rest_framework import serializers


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="invalid_transition, conflict, lease_lost, paused, …")
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()
